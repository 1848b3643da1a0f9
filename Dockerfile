# `postwire serve` in a container, with its SQLite database (and the files beside it: the
# key that encrypts signing secrets, the ingest token) on a volume.
#
# NOT TESTED HERE: the project's build machines have no container daemon and no base
# images, so CI has never built this file. It is kept minimal for that reason; what it
# runs (`cargo install --locked` of postwire-cli, `postwire serve`) is what CI tests.
#
#   docker build -t postwire .
#   docker run -d --name postwire -p 8080:8080 -v postwire-data:/data postwire
#   docker exec postwire postwire token create --workspace ws_1 --scope webhooks:write
#   docker exec postwire cat /data/postwire.db.ingest-token
#
# Every `postwire serve` setting is a POSTWIRE_* variable (`postwire serve --help`), e.g.
# -e POSTWIRE_DATABASE_URL=postgres://… for PostgreSQL instead of the volume's SQLite file.
# Back up /data/postwire.db.secret-key apart from the database (docs/production.md).

FROM rust:1.89-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo install --locked --path crates/postwire-cli --root /out

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data postwire \
 && mkdir /data && chown postwire /data
COPY --from=build /out/bin/postwire /usr/local/bin/postwire
USER postwire
VOLUME /data
ENV POSTWIRE_DB=/data/postwire.db POSTWIRE_LISTEN=0.0.0.0:8080
EXPOSE 8080
# SIGTERM (docker stop) lets deliveries in flight finish.
ENTRYPOINT ["postwire"]
CMD ["serve"]
