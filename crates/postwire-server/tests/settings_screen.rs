//! The Settings screen over real HTTP (no browser; `tests/settings/` drives Chromium):
//! magic links (single use, expiry on the API's clock, revocation), the session
//! cookie's attributes, the CSRF rules of every form post, workspace isolation, the
//! security headers, and that user and receiver text is escaped.

mod common;

use common::Harness;
use postwire_server::tokens::Scope;
use postwire_testkit::scripted::{Receiver, Reply};
use serde_json::json;

/// A client that does not follow redirects (303 after a form post is the answer).
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
}

async fn get(h: &Harness, path: &str, cookie: Option<&str>) -> Page {
    let mut req = browser().get(format!("{}{path}", h.base));
    if let Some(c) = cookie {
        req = req.header("cookie", format!("pw_settings={c}"));
    }
    let r = req.send().await.unwrap();
    Page {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

/// A form post as a page of this origin sends it, with `fields` (url-encoded here).
async fn post(h: &Harness, path: &str, cookie: &str, origin: Option<&str>, fields: &[(&str, &str)]) -> Page {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let mut req = browser()
        .post(format!("{}{path}", h.base))
        .header("cookie", format!("pw_settings={cookie}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    let r = req.send().await.unwrap();
    Page {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

/// The magic link of a new portal session of `ws`, through the API.
async fn link(h: &Harness, token: &str, ws: &str) -> (String, String) {
    let r = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/{ws}/portal-sessions"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let url = r.json["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("{}/settings/login?link=pwl_", h.base)),
        "{url}"
    );
    (url, r.json["id"].as_str().unwrap().to_owned())
}

/// Opens `url` (a magic link) and presses its sign-in button; returns the session
/// cookie's value and its header.
async fn sign_in(url: &str) -> (String, String) {
    let page = browser().get(url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers().get("set-cookie").is_none(),
        "opening the link uses nothing up"
    );
    let base = url.split("/settings/").next().unwrap().to_owned();
    let link = url.split("link=").nth(1).unwrap().to_owned();
    let html = page.text().await.unwrap();
    assert!(html.contains(&format!("name=\"link\" value=\"{link}\"")));
    let r = browser()
        .post(format!("{base}/settings/login"))
        .header("origin", &base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("link={link}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/settings/");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let value = set
        .strip_prefix("pw_settings=")
        .and_then(|s| s.split(';').next())
        .unwrap()
        .to_owned();
    (value, set)
}

fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_magic_link_opens_one_workspace_once_and_revocation_ends_the_session() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let (url, id) = link(&h, &t, "ws_a").await;
    let (cookie, set) = sign_in(&url).await;
    for attribute in [
        "Secure",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/settings",
        "Max-Age=3600",
    ] {
        assert!(set.contains(attribute), "{set}");
    }
    // Used once: the same link is refused, opened or posted.
    let again = browser().get(&url).send().await.unwrap();
    assert_eq!(again.status(), 403);
    assert!(again.headers().get("set-cookie").is_none());
    let link_token = url.split("link=").nth(1).unwrap();
    let reposted = browser()
        .post(format!("{}/settings/login", h.base))
        .header("origin", &h.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("link={link_token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(reposted.status(), 403);
    assert!(reposted.headers().get("set-cookie").is_none());
    // A sign-in posted from another site is refused before the link is looked at.
    let (fresh, _) = link(&h, &t, "ws_a").await;
    let cross = browser()
        .post(format!("{}/settings/login", h.base))
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("link={}", fresh.split("link=").nth(1).unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    sign_in(&fresh).await; // still unused

    let home = get(&h, "/settings/", Some(&cookie)).await;
    assert_eq!(home.status, 200, "{}", home.text);
    assert!(home.text.contains("Workspace ws_a"));
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(home.headers[name], value);
    }
    let csp = home.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval';") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert!(
        !home.text.contains("<script>") && !home.text.contains(" style="),
        "no inline script or style"
    );

    // No cookie, or a made-up one: signed out.
    assert_eq!(get(&h, "/settings/", None).await.status, 401);
    assert_eq!(get(&h, "/settings/", Some("pws_forged")).await.status, 401);

    // Revoked through the API: the session ends at once.
    let other = h.token(&[Scope::WebhooksWrite], &["ws_b"]).await;
    let foreign = h
        .send(
            "DELETE",
            &format!("/public/v1/workspaces/ws_b/portal-sessions/{id}"),
            Some(&other),
            None,
        )
        .await;
    foreign.assert_error(404, "not_found");
    let revoked = h
        .send(
            "DELETE",
            &format!("/public/v1/workspaces/ws_a/portal-sessions/{id}"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text);
    assert_eq!(get(&h, "/settings/", Some(&cookie)).await.status, 401);
    h.stop().await;
}

#[tokio::test]
async fn links_need_write_scope_and_expire_on_the_clock() {
    let h = Harness::start().await;
    let reader = h.token(&[Scope::WebhooksRead], &["ws_a"]).await;
    h.send(
        "POST",
        "/public/v1/workspaces/ws_a/portal-sessions",
        Some(&reader),
        None,
    )
    .await
    .assert_error(403, "insufficient_scope");
    let t = h.writer().await;
    h.send("POST", "/public/v1/workspaces/ws_b/portal-sessions", Some(&t), None)
        .await
        .assert_error(403, "forbidden");
    h.send("POST", "/public/v1/workspaces/ws_a/portal-sessions", None, None)
        .await
        .assert_error(401, "unauthorized");

    let (url, _) = link(&h, &t, "ws_a").await;
    h.api_clock.advance_millis(5 * 60 * 1000);
    let late = browser().get(&url).send().await.unwrap();
    assert_eq!(late.status(), 403, "expired after 5 minutes");
    assert!(late.text().await.unwrap().contains("expired"));
    let bad = browser()
        .get(format!("{}/settings/login?link=pwl_nope", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 403);

    // A session ends after an hour.
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    assert_eq!(get(&h, "/settings/", Some(&cookie)).await.status, 200);
    h.api_clock.advance_millis(3600 * 1000);
    assert_eq!(get(&h, "/settings/", Some(&cookie)).await.status, 401);
    h.stop().await;
}

#[tokio::test]
async fn every_form_post_needs_this_origin_and_the_session_csrf_token() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let sub = h.subscribe(&t, "https://93.184.216.34/hooks").await;
    let id = sub["id"].as_str().unwrap();
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let page = get(&h, &format!("/settings/webhooks/{id}"), Some(&cookie)).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = csrf_of(&page.text);
    let origin = h.base.clone();
    let path = format!("/settings/webhooks/{id}/pause");

    // Another site's form: refused whatever it carries.
    let cross = post(&h, &path, &cookie, Some("http://evil.example"), &[("csrf", &csrf)]).await;
    assert_eq!(cross.status, 403);
    // This origin, but no or a wrong token.
    assert_eq!(post(&h, &path, &cookie, Some(&origin), &[]).await.status, 403);
    assert_eq!(
        post(&h, &path, &cookie, Some(&origin), &[("csrf", "x")]).await.status,
        403
    );
    // No Origin and no Sec-Fetch-Site: refused.
    assert_eq!(post(&h, &path, &cookie, None, &[("csrf", &csrf)]).await.status, 403);
    let state = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(state.json["disabled"], false, "nothing changed");

    // A token of another session does not work either.
    let (url2, _) = link(&h, &t, "ws_a").await;
    let (cookie2, _) = sign_in(&url2).await;
    assert_eq!(
        post(&h, &path, &cookie2, Some(&origin), &[("csrf", &csrf)])
            .await
            .status,
        403
    );

    let ok = post(&h, &path, &cookie, Some(&origin), &[("csrf", &csrf)]).await;
    assert_eq!(ok.status, 303, "{}", ok.text);
    assert_eq!(ok.headers["location"], format!("/settings/webhooks/{id}?done=paused"));
    let state = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(state.json["disabledReason"], "paused by request");
    h.stop().await;
}

#[tokio::test]
async fn a_session_sees_only_its_workspace_and_text_is_escaped() {
    let h = Harness::start().await;
    let ta = h.writer().await;
    let tb = h.token(&[Scope::WebhooksWrite], &["ws_b"]).await;
    let r = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_b/webhooks",
            &tb,
            json!({"name": "b's", "url": "https://93.184.216.34/b"}),
        )
        .await;
    let b_id = r.json["id"].as_str().unwrap().to_owned();
    let (url, _) = link(&h, &ta, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    assert_eq!(
        get(&h, &format!("/settings/webhooks/{b_id}"), Some(&cookie))
            .await
            .status,
        404
    );
    let page = get(&h, "/settings/new", Some(&cookie)).await;
    let csrf = csrf_of(&page.text);
    let del = post(
        &h,
        &format!("/settings/webhooks/{b_id}/delete"),
        &cookie,
        Some(&h.base),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(del.status, 404, "another workspace's subscription is not found");

    // Created on the screen: createdByKind dashboard, the secret shown in this response
    // only, the name escaped wherever it appears.
    let name = "<script>alert(1)</script>";
    let created = post(
        &h,
        "/settings/webhooks",
        &cookie,
        Some(&h.base),
        &[
            ("csrf", &csrf),
            ("name", name),
            ("url", "https://93.184.216.34/a"),
            ("events", "post.failed"),
        ],
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert!(created.text.contains("whsec_") && created.text.contains("will not be shown again"));
    assert!(!created.text.contains(name) && created.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&ta), None)
        .await;
    let sub = &list.json["data"][0];
    assert_eq!(sub["createdByKind"], "dashboard");
    assert_eq!(sub["events"], json!(["post.failed"]));
    let home = get(&h, "/settings/", Some(&cookie)).await;
    assert!(!home.text.contains(name) && !home.text.contains("whsec_"));
    assert_eq!(
        sub["signing"], "symmetric",
        "a form without the choice keeps the spec's default"
    );

    // The signing choice (the v1a extension): set on creation, shown checked on the edit
    // form, changed by an edit; an unknown value is refused with the form.
    let created = post(
        &h,
        "/settings/webhooks",
        &cookie,
        Some(&h.base),
        &[
            ("csrf", &csrf),
            ("name", "both"),
            ("url", "https://93.184.216.34/both"),
            ("signing", "both"),
        ],
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&ta), None)
        .await;
    let both = list.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "both")
        .unwrap()
        .clone();
    assert_eq!(both["signing"], "both");
    let both_id = both["id"].as_str().unwrap();
    let edit = get(&h, &format!("/settings/webhooks/{both_id}/edit"), Some(&cookie)).await;
    assert!(
        edit.text.contains(r#"value="both" checked"#),
        "the edit form shows the stored choice: {}",
        edit.text
    );
    // The edit form posted with only its signing choice changed.
    let edit_signing = |signing: &'static str| {
        let path = format!("/settings/webhooks/{both_id}/edit");
        let (h, cookie, csrf) = (&h, &cookie, &csrf);
        async move {
            let fields = [
                ("csrf", csrf.as_str()),
                ("name", "both"),
                ("url", "https://93.184.216.34/both"),
                ("signing", signing),
            ];
            post(h, &path, cookie, Some(&h.base), &fields).await
        }
    };
    let edited = edit_signing("asymmetric").await;
    assert_eq!(edited.status, 303, "{}", edited.text);
    let one = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{both_id}"),
            Some(&ta),
            None,
        )
        .await;
    assert_eq!(one.json["signing"], "asymmetric", "{}", one.json);
    let refused = edit_signing("rsa").await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("an unknown signing choice"), "{}", refused.text);

    // Invalid input comes back as the form with every reason.
    let invalid = post(
        &h,
        "/settings/webhooks",
        &cookie,
        Some(&h.base),
        &[("csrf", &csrf), ("name", ""), ("url", "ftp://x")],
    )
    .await;
    assert_eq!(invalid.status, 400);
    assert!(invalid.text.contains("`name` must not be empty"), "{}", invalid.text);
    h.stop().await;
}

/// A real HTTP receiver on loopback that answers 500 with an HTML body (it stops when
/// dropped).
async fn hostile_receiver() -> Receiver {
    Receiver::start(|_, _| {
        Reply::status(500)
            .header("content-type", "text/html")
            .body("<script>alert('owned')</script><b>bold</b>")
    })
    .await
}

#[tokio::test]
async fn a_receiver_body_is_shown_as_text_and_a_failed_delivery_can_be_resent() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let receiver = hostile_receiver().await;
    let url = receiver.url.clone();
    let sub = h.subscribe(&t, &url).await;
    let id = sub["id"].as_str().unwrap();
    let (link_url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&link_url).await;
    let page = get(&h, &format!("/settings/webhooks/{id}"), Some(&cookie)).await;
    let csrf = csrf_of(&page.text);
    let sent = post(
        &h,
        &format!("/settings/webhooks/{id}/test"),
        &cookie,
        Some(&h.base),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(sent.status, 303);
    let path = format!("/public/v1/workspaces/ws_a/webhooks/{id}/deliveries");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let (base, token) = (h.base.clone(), t.clone());
    let attempted = move || {
        let (http, base, token, path) = (http.clone(), base.clone(), token.clone(), path.clone());
        async move {
            let text = http
                .get(format!("{base}{path}"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let r: serde_json::Value = serde_json::from_str(&text).unwrap();
            !r["data"][0]["attempts"].as_array().unwrap().is_empty()
        }
    };
    for _ in 0..250 {
        if attempted().await {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(attempted().await, "the test event was attempted");
    let page = get(&h, &format!("/settings/webhooks/{id}"), Some(&cookie)).await;
    assert!(page.text.contains("HTTP 500"));
    assert!(!page.text.contains("<script>alert('owned')"), "never markup");
    assert!(
        page.text
            .contains("&lt;script&gt;alert('owned')&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;")
    );
    h.stop().await;
}

/// Ingest batches of `n` post events for `ws_a` (distinct posts).
async fn publish_many(h: &Harness, n: usize) {
    for chunk in 0..n.div_ceil(1000) {
        let changes: Vec<serde_json::Value> = (chunk * 1000..((chunk + 1) * 1000).min(n))
            .map(|i| {
                json!({"kind": "post", "workspaceId": "ws_a", "change": "scheduled", "post": {
                    "id": format!("post_{i}"), "externalId": format!("ext_{i}"), "group": "g", "state": "QUEUE",
                    "publishDate": "2026-12-01T09:00:00Z",
                    "integration": {"id": "acc_a1", "name": "Account acc_a1", "providerIdentifier": "x"},
                    "content": "x"}})
            })
            .collect();
        let r = h
            .ingest("POST", "/internal/v1/events", json!({"changes": changes}))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_stay_bounded_with_thousands_of_deliveries() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let sub = h.subscribe(&t, "https://93.184.216.34/hooks").await;
    let id = sub["id"].as_str().unwrap().to_owned();
    // Paused: 5,000 deliveries are held, nothing is attempted.
    let r = h
        .json(
            "PUT",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}/enabled"),
            &t,
            json!({"enabled": false}),
        )
        .await;
    assert_eq!(r.status, 200);
    publish_many(&h, 5000).await;
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;

    let started = std::time::Instant::now();
    let home = get(&h, "/settings/", Some(&cookie)).await;
    let home_ms = started.elapsed().as_millis();
    assert_eq!(home.status, 200);
    assert!(
        home.text.contains("most recent 1000 deliveries"),
        "the 24-hour summary reads a bounded number of deliveries"
    );

    // Unfiltered: one page of 20, and a cursor to the next.
    let started = std::time::Instant::now();
    let page = get(&h, &format!("/settings/webhooks/{id}"), Some(&cookie)).await;
    let page_ms = started.elapsed().as_millis();
    assert_eq!(page.text.matches("<li class=\"delivery\"").count(), 20);
    assert!(page.text.contains("rel=\"next\""));

    // A filter that matches nothing reads at most 500 deliveries, then offers to go on.
    let started = std::time::Instant::now();
    let none = get(&h, &format!("/settings/webhooks/{id}?type=post.failed"), Some(&cookie)).await;
    let filtered_ms = started.elapsed().as_millis();
    assert_eq!(none.status, 200);
    assert!(none.text.contains("No deliveries match."));
    let next = none
        .text
        .split("?cursor=")
        .nth(1)
        .expect("a cursor to older deliveries");
    let cursor: String = next
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let n: i64 = cursor.trim_start_matches("c_").parse().unwrap();
    assert!(n > 4000, "stopped after about 500 of 5000: {cursor}");
    println!("5,000 deliveries: list {home_ms} ms, log page {page_ms} ms, filtered page {filtered_ms} ms");
    for ms in [home_ms, page_ms, filtered_ms] {
        assert!(ms < 5_000, "a page took {ms} ms");
    }
    h.stop().await;
}

/// A real receiver on loopback that answers 500 while `down` is set, 200 otherwise, and
/// counts the requests it got (it stops when dropped).
async fn switchable_receiver(
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> Receiver {
    use std::sync::atomic::Ordering;
    Receiver::start(move |_, _| {
        count.fetch_add(1, Ordering::SeqCst);
        if down.load(Ordering::SeqCst) {
            Reply::status(500)
        } else {
            Reply::ok()
        }
    })
    .await
}

/// The whole failure story on a manual sender clock: 50 deliveries fail for good (22 h
/// of retries each, in milliseconds), the sender pauses the subscription and notifies;
/// the screen shows the notice and the pause, recovers the 50 (held, since paused) and
/// resumes, and the receiver gets all 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_failures_are_noticed_recovered_and_delivered_from_the_screen() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use postwire_core::{ManualClock, Timestamp};
    use postwire_sender::{DomainChange, SenderConfig, TestEvent, Workspace};
    use postwire_server::{NewToken, Server, ServerOptions};

    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let mut options = ServerOptions::new(dir.path().join("p.db"));
    options.sender_config = SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        attempt_timeout: std::time::Duration::from_secs(3),
        idle_poll: std::time::Duration::from_millis(20),
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls();
    options.sender_clock = clock.clone();
    let server = Server::open(options).await.unwrap();
    let sender = server.state().sender.clone();
    sender
        .upsert_workspace(Workspace {
            id: "ws_a".into(),
            name: "Workspace ws_a".into(),
        })
        .await
        .unwrap();
    let token = server
        .state()
        .tokens
        .create(
            NewToken {
                name: "t".into(),
                scopes: vec![Scope::WebhooksWrite],
                workspaces: vec!["ws_a".into()],
            },
            Timestamp::from_unix_millis(1_800_000_000_000),
        )
        .await
        .unwrap()
        .token;
    let running = server.start("127.0.0.1:0").await.unwrap();
    let base = running.base_url();
    let (down, count) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
    let receiver = switchable_receiver(down.clone(), count.clone()).await;
    let url = receiver.url.clone();
    let api = reqwest::Client::builder().no_proxy().build().unwrap();
    let created: serde_json::Value = serde_json::from_str(
        &api.post(format!("{base}/public/v1/workspaces/ws_a/webhooks"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(json!({"name": "flaky", "url": url}).to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();

    let tests: Vec<DomainChange> = (0..50)
        .map(|i| {
            TestEvent {
                workspace_id: "ws_a".into(),
                subscription_id: Some(id.clone()),
                message: format!("test {i}"),
            }
            .into()
        })
        .collect();
    sender.publish_many(tests).await.unwrap();
    sender.wait_idle().await.unwrap();
    for minutes in [1, 2, 10, 30, 60, 180, 360, 720] {
        clock.advance_millis(minutes * 60_000);
        sender.wait_idle().await.unwrap();
    }
    assert_eq!(count.load(Ordering::SeqCst), 50 * 9, "nine attempts each");
    let record = sender.subscription(&id).await.unwrap();
    assert!(
        record.subscription.status.is_paused(),
        "paused after 50 failures in a row"
    );

    // The screen.
    let link: serde_json::Value = serde_json::from_str(
        &api.post(format!("{base}/public/v1/workspaces/ws_a/portal-sessions"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let (cookie, _) = sign_in(link["url"].as_str().unwrap()).await;
    let h = Harness {
        server: None,
        base: base.clone(),
        http: api.clone(),
        api_clock: Arc::new(ManualClock::new(Timestamp::from_unix_millis(0))),
        dir: tempfile::tempdir().unwrap(),
    };
    let notices = get(&h, "/settings/notifications", Some(&cookie)).await;
    assert!(notices.text.contains("50"), "{}", notices.text);
    assert!(notices.text.contains(&format!("/settings/webhooks/{id}")));
    let home = get(&h, "/settings/", Some(&cookie)).await;
    // endpoint.failing (the first delivery failed for good), endpoint.pause_warning (at
    // 40), endpoint.paused (at 50).
    assert!(
        home.text.contains("Paused") && home.text.contains("Notifications: 3 recent"),
        "{}",
        home.text
    );
    assert!(home.text.contains("1 endpoint is paused"), "the banner: {}", home.text);
    assert!(home.text.contains("50 failed"), "the 24-hour chart counts them");

    let page = get(&h, &format!("/settings/webhooks/{id}?state=failed"), Some(&cookie)).await;
    assert_eq!(
        page.text.matches("<li class=\"delivery\"").count(),
        20,
        "a page of the 50 failed"
    );
    let csrf = csrf_of(&page.text);
    down.store(false, Ordering::SeqCst);
    let recovered = post(
        &h,
        &format!("/settings/webhooks/{id}/recover"),
        &cookie,
        Some(&base),
        &[("csrf", &csrf), ("since", "2020-01-01T00:00")],
    )
    .await;
    assert_eq!(recovered.status, 303, "{}", recovered.text);
    assert_eq!(
        recovered.headers["location"],
        format!("/settings/webhooks/{id}?done=recovered&recovered=50")
    );
    let shown = get(
        &h,
        &format!("/settings/webhooks/{id}?done=recovered&recovered=50"),
        Some(&cookie),
    )
    .await;
    assert!(shown.text.contains("Recover queued 50 failed deliveries."));
    sender.wait_idle().await.unwrap();
    assert_eq!(
        count.load(Ordering::SeqCst),
        450,
        "held: the subscription is still paused"
    );

    let resumed = post(
        &h,
        &format!("/settings/webhooks/{id}/resume"),
        &cookie,
        Some(&base),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(
        resumed.headers["location"],
        format!("/settings/webhooks/{id}?done=resumed&released=50&expired=0")
    );
    sender.wait_idle().await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), 500, "all 50 delivered");
    let again = post(
        &h,
        &format!("/settings/webhooks/{id}/recover"),
        &cookie,
        Some(&base),
        &[("csrf", &csrf), ("since", "2020-01-01T00:00")],
    )
    .await;
    assert!(
        again.headers["location"].to_str().unwrap().ends_with("recovered=0"),
        "each failure once"
    );
    drop(h);
    running.shutdown().await;
}

/// The value of the form field (`<textarea id=…>` or `<input id=… value=…>`) `id` in
/// server-rendered HTML, unescaped.
fn field_of(html: &str, id: &str) -> String {
    let unescape = |s: &str| {
        s.replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    if let Some(at) = html.find(&format!("<textarea id=\"{id}\"")) {
        let rest = &html[at..];
        let start = rest.find('>').unwrap() + 1;
        let end = rest.find("</textarea>").unwrap();
        return unescape(&rest[start..end]);
    }
    let at = html.find(&format!("id=\"{id}\"")).expect("the field");
    let rest = &html[at..];
    let v = rest.find("value=\"").unwrap() + 7;
    unescape(rest[v..].split('"').next().unwrap())
}

#[tokio::test]
async fn the_event_catalogue_verifies_a_sample_with_the_published_public_key_and_holds_no_secret() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let page = get(&h, "/settings/events", Some(&cookie)).await;
    assert_eq!(page.status, 200);
    let listed = h
        .send("GET", "/public/v1/workspaces/ws_a/signing-keys", Some(&t), None)
        .await;
    let public = listed.json["data"][0]["publicKey"].as_str().unwrap().to_owned();
    assert_eq!(field_of(&page.text, "v-public-key"), public);
    assert!(page.text.contains(&public));
    // No secret or signing key on the page (the labels name the prefixes only).
    for prefix in ["whsec_", "whsk_"] {
        for (at, _) in page.text.match_indices(prefix) {
            let next = page.text[at + prefix.len()..].chars().next().unwrap_or(' ');
            assert!(
                !next.is_ascii_alphanumeric() && next != '+' && next != '/',
                "a {prefix} key on the page"
            );
        }
    }
    // The prefilled delivery verifies with the public key alone, as the page's script
    // does it in the browser.
    let headers: Vec<(String, String)> = field_of(&page.text, "v-headers")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let body = field_of(&page.text, "v-body");
    let ts: i64 = headers
        .iter()
        .find(|(k, _)| k == "webhook-timestamp")
        .unwrap()
        .1
        .parse()
        .unwrap();
    let verifier = postwire_core::Verifier::parse_keys([public.as_str()]).unwrap();
    let event = verifier
        .verify_event(&headers, body.as_bytes(), postwire_core::UnixTime::from_secs(ts))
        .unwrap();
    assert_eq!(event.event_type().as_str(), "webhook.test");
    let other = postwire_core::SigningKey::generate().unwrap().public_key();
    assert!(
        postwire_core::Verifier::from_public_key(other)
            .verify(&headers, body.as_bytes(), postwire_core::UnixTime::from_secs(ts))
            .is_err()
    );
    // The page's script asks for the v1a build by this path (404 when the npm package
    // was not built before the server).
    let asset = get(&h, "/settings/assets/postwire-v1a.js", None).await;
    assert!(asset.status == 200 || asset.status == 404, "{}", asset.status);
    h.stop().await;
}

#[tokio::test]
async fn the_verify_box_checks_on_the_server_in_every_build_and_never_echoes_the_secret() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let page = get(&h, "/settings/events", Some(&cookie)).await;
    let csrf = csrf_of(&page.text);
    // The form goes to the server, whatever this build embeds.
    assert!(
        page.text
            .contains(r#"<form class="stack" id="verify-form" method="post" action="/settings/events/verify""#),
        "{}",
        page.text
    );
    let (headers, body, public) = (
        field_of(&page.text, "v-headers"),
        field_of(&page.text, "v-body"),
        field_of(&page.text, "v-public-key"),
    );
    let verdict = |page: &Page| {
        let at = page.text.find("id=\"v-result\"").expect("the verdict");
        let rest = &page.text[at..];
        rest[rest.find('>').unwrap() + 1..rest.find("</output>").unwrap()].to_owned()
    };
    let origin = h.base.clone();
    let send = |fields: Vec<(&'static str, String)>| {
        let (cookie, csrf, origin) = (cookie.clone(), csrf.clone(), origin.clone());
        let h = &h;
        async move {
            let mut all: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            all.push(("csrf", csrf.as_str()));
            post(h, "/settings/events/verify", &cookie, Some(&origin), &all).await
        }
    };

    // The sample, with the public key: valid.
    let r = send(vec![
        ("headers", headers.clone()),
        ("body", body.clone()),
        ("public_key", public.clone()),
    ])
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(verdict(&r).starts_with("Valid: webhook.test msg_"), "{}", verdict(&r));
    // A changed body: invalid_signature, and what was posted is shown again.
    let tampered = body.replace("sample", "SAMPLE");
    assert_ne!(tampered, body);
    let r = send(vec![
        ("headers", headers.clone()),
        ("body", tampered.clone()),
        ("public_key", public.clone()),
    ])
    .await;
    assert!(
        verdict(&r).starts_with("Not valid: invalid_signature"),
        "{}",
        verdict(&r)
    );
    assert_eq!(field_of(&r.text, "v-body"), tampered);
    // A v1 delivery with a subscription's secret: valid; the secret is not on the page.
    let secret = postwire_core::Secret::generate().unwrap();
    // Signed at the server's (test) clock: the sample's own timestamp.
    let now: i64 = headers
        .lines()
        .find_map(|l| l.strip_prefix("webhook-timestamp: "))
        .unwrap()
        .parse()
        .unwrap();
    let id = body_id(&body);
    let signature = postwire_core::Signer::new(secret.clone())
        .sign(&id, postwire_core::UnixTime::from_secs(now), body.as_bytes())
        .unwrap()
        .to_string();
    let v1_headers = format!("webhook-id: {id}\nwebhook-timestamp: {now}\nwebhook-signature: {signature}");
    let r = send(vec![
        ("headers", v1_headers.clone()),
        ("body", body.clone()),
        ("public_key", public.clone()),
        ("secret", secret.expose()),
    ])
    .await;
    assert!(verdict(&r).starts_with("Valid: webhook.test"), "{}", verdict(&r));
    assert!(!r.text.contains(&secret.expose()[6..]), "the secret came back");
    // A bad key is its stable code, not a crash; a missing header too.
    let r = send(vec![
        ("headers", v1_headers),
        ("body", body.clone()),
        ("secret", "whsec_!!".into()),
    ])
    .await;
    assert!(verdict(&r).starts_with("Not valid: invalid_secret"), "{}", verdict(&r));
    let r = send(vec![("headers", String::new()), ("body", body), ("public_key", public)]).await;
    assert!(verdict(&r).starts_with("Not valid: missing_header"), "{}", verdict(&r));
    // The form's CSRF rules hold here as on every other form.
    let r = post(
        &h,
        "/settings/events/verify",
        &cookie,
        Some(&h.base),
        &[("headers", "")],
    )
    .await;
    assert_eq!(r.status, 403);
    h.stop().await;
}

/// The envelope `id` of a delivery body.
fn body_id(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

/// The `value` of the page's secret field.
fn secret_on(html: &str) -> String {
    let at = html.find("id=\"secret\"").expect("a secret field");
    let value = html[at..].find("value=\"").unwrap() + at + 7;
    html[value..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn operator_endpoints_are_added_rotated_paused_and_deleted_on_their_own_page() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let sub = h.subscribe(&t, "https://93.184.216.34/hooks").await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let origin = h.base.clone();
    let page = get(&h, "/settings/operator-endpoints", Some(&cookie)).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("No operator endpoints yet"), "{}", page.text);
    assert!(page.text.contains("never to itself"), "{}", page.text);
    let csrf = csrf_of(&page.text);
    let ops = "/settings/operator-endpoints";

    // The CSRF rules hold here too.
    let fields = [("name", "ops"), ("url", "https://93.184.216.34/ops")];
    assert_eq!(post(&h, ops, &cookie, Some(&origin), &fields).await.status, 403);
    assert_eq!(
        post(
            &h,
            ops,
            &cookie,
            Some("http://evil.example"),
            &[("csrf", &csrf), fields[0], fields[1]]
        )
        .await
        .status,
        403
    );
    // A refused URL: the page again, with the problem and what was typed.
    let bad = post(
        &h,
        ops,
        &cookie,
        Some(&origin),
        &[("csrf", &csrf), ("name", "ops"), ("url", "not-a-url")],
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert!(bad.text.contains("not a valid absolute URL"), "{}", bad.text);
    assert!(bad.text.contains("value=\"not-a-url\""), "{}", bad.text);

    let created = post(
        &h,
        ops,
        &cookie,
        Some(&origin),
        &[("csrf", &csrf), fields[0], fields[1]],
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let secret = secret_on(&created.text);
    assert!(secret.starts_with("whsec_"), "{secret}");
    let api = h
        .send("GET", "/public/v1/workspaces/ws_a/operator-webhooks", Some(&t), None)
        .await;
    let id = api.json["data"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.json["data"][0]["name"], "ops");
    let page = get(&h, ops, Some(&cookie)).await;
    assert!(page.text.contains(&format!("id=\"op-{id}\"")), "{}", page.text);
    assert!(!page.text.contains("whsec_"), "the secret is shown once: {}", page.text);
    // Not among the subscriptions, nor reachable as one; and a subscription is not one.
    assert!(!get(&h, "/settings/", Some(&cookie)).await.text.contains(&id));
    assert_eq!(
        get(&h, &format!("/settings/webhooks/{id}"), Some(&cookie)).await.status,
        404
    );
    assert_eq!(
        get(&h, &format!("{ops}/{sub_id}/delete"), Some(&cookie)).await.status,
        404
    );
    let r = post(
        &h,
        &format!("{ops}/{sub_id}/rotate"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text);

    let rotated = post(
        &h,
        &format!("{ops}/{id}/rotate"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let new_secret = secret_on(&rotated.text);
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert!(rotated.text.contains("signed with both"), "{}", rotated.text);

    let paused = post(
        &h,
        &format!("{ops}/{id}/pause"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(
        (paused.status, paused.headers["location"].to_str().unwrap()),
        (303, ops)
    );
    let page = get(&h, ops, Some(&cookie)).await;
    assert!(
        page.text.contains(&format!("action=\"{ops}/{id}/resume\"")),
        "{}",
        page.text
    );
    let resumed = post(
        &h,
        &format!("{ops}/{id}/resume"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(resumed.status, 303);

    let confirm = get(&h, &format!("{ops}/{id}/delete"), Some(&cookie)).await;
    assert_eq!(confirm.status, 200, "{}", confirm.text);
    let deleted = post(
        &h,
        &format!("{ops}/{id}/delete"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(deleted.status, 303, "{}", deleted.text);
    let api = h
        .send("GET", "/public/v1/workspaces/ws_a/operator-webhooks", Some(&t), None)
        .await;
    assert_eq!(api.json["data"], json!([]));
    assert!(
        get(&h, ops, Some(&cookie))
            .await
            .text
            .contains("No operator endpoints yet")
    );
    h.stop().await;
}

/// The Settings page of operator endpoint `id` once `n` deliveries are listed and none is
/// pending (at most 20 s).
async fn settled_operator_page(h: &Harness, cookie: &str, id: &str, n: usize) -> Page {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let page = get(h, &format!("/settings/operator-endpoints/{id}"), Some(cookie)).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let listed = page.text.matches("<li class=\"delivery\"").count();
        if listed == n && !page.text.contains("data-state=\"pending\"") {
            return page;
        }
        assert!(std::time::Instant::now() < deadline, "{}", page.text);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_operator_endpoints_page_sends_a_test_notice_and_shows_its_deliveries() {
    use postwire_core::{Secret, UnixTime, Verifier};
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = Receiver::succeeding().await;
    let api_ops = "/public/v1/workspaces/ws_a/operator-webhooks";
    let created = h.json("POST", api_ops, &t, json!({"name": "ops", "url": rx.url})).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json["id"].as_str().unwrap().to_owned();
    let op_secret = Secret::parse(created.json["secret"].as_str().unwrap()).unwrap();
    let sub = h.subscribe(&t, "https://93.184.216.34/hooks").await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    // A real notice first: a subscription's secret rotated.
    let r = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/ws_a/webhooks/{sub_id}/rotate-secret"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(rx.wait_for_count(1, std::time::Duration::from_secs(20)).await);

    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let origin = h.base.clone();
    let ops = "/settings/operator-endpoints";
    let list = get(&h, ops, Some(&cookie)).await;
    assert!(
        list.text.contains(&format!("href=\"{ops}/{id}\"")),
        "the list links to the endpoint's page: {}",
        list.text
    );
    assert!(
        list.text.contains(&format!("action=\"{ops}/{id}/test\"")),
        "{}",
        list.text
    );
    let csrf = csrf_of(&list.text);

    // "Send test": CSRF-checked like every post; then the endpoint's page.
    let refused = post(&h, &format!("{ops}/{id}/test"), &cookie, Some(&origin), &[]).await;
    assert_eq!(refused.status, 403);
    let sent = post(
        &h,
        &format!("{ops}/{id}/test"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(sent.status, 303, "{}", sent.text);
    assert_eq!(sent.headers["location"], format!("{ops}/{id}?done=test").as_str());
    assert!(
        rx.wait_for_count(2, std::time::Duration::from_secs(20)).await,
        "the test notice arrives"
    );
    let req = &rx.requests()[1];
    Verifier::with_secrets([op_secret])
        .unwrap()
        .verify(&req.headers, &req.body, UnixTime::from_secs(req.timestamp()))
        .expect("signed with the endpoint's own secret");
    assert_eq!(req.json()["type"], "webhook.test");

    // Its page: both deliveries with their state, type, attempts and body; no secret.
    let page = settled_operator_page(&h, &cookie, &id, 2).await;
    let text = &page.text;
    assert!(text.contains("<code>endpoint.secret_rotated</code>"), "{text}");
    assert!(text.contains("<code>webhook.test</code>"), "{text}");
    assert_eq!(text.matches("data-state=\"delivered\"").count(), 2, "{text}");
    assert_eq!(text.matches("HTTP 200").count(), 2, "{text}");
    assert!(text.contains("This is a test event from postwire."), "the body: {text}");
    assert!(
        text.contains(&sub_id),
        "the notice's body names the subscription: {text}"
    );
    assert!(!text.contains("whsec_"), "{text}");
    // Filtered by the operational types; a spec event's type is not one of this log's.
    let filtered = get(&h, &format!("{ops}/{id}?type=endpoint.secret_rotated"), Some(&cookie)).await;
    assert_eq!(filtered.status, 200, "{}", filtered.text);
    assert_eq!(filtered.text.matches("<li class=\"delivery\"").count(), 1);
    assert!(
        filtered.text.contains("<option value=\"signing_key.rotated\">"),
        "{}",
        filtered.text
    );
    let wrong = get(&h, &format!("{ops}/{id}?type=post.published"), Some(&cookie)).await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);

    // Resend the notice from the page.
    let api = h
        .send("GET", &format!("{api_ops}/{id}/deliveries"), Some(&t), None)
        .await;
    let notice = api.json["data"][1]["id"].as_str().unwrap().to_owned();
    let resent = post(
        &h,
        &format!("{ops}/{id}/deliveries/{notice}/resend"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(resent.status, 303, "{}", resent.text);
    assert!(
        rx.wait_for_count(3, std::time::Duration::from_secs(20)).await,
        "the resend arrives"
    );
    assert_eq!(rx.requests()[2].id(), rx.requests()[0].id());
    settled_operator_page(&h, &cookie, &id, 3).await;
    let location = resent.headers["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&format!("{ops}/{id}?done=resent")), "{location}");
    let page = get(&h, &location, Some(&cookie)).await;
    assert!(page.text.contains("Resent: the new delivery is"), "{}", page.text);

    // A subscription is not an operator endpoint here.
    assert_eq!(get(&h, &format!("{ops}/{sub_id}"), Some(&cookie)).await.status, 404);
    let r = post(
        &h,
        &format!("{ops}/{sub_id}/test"),
        &cookie,
        Some(&origin),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text);

    // Notifications link to each endpoint's page while it exists, and to no page once
    // it is deleted.
    let r = h
        .send("POST", &format!("{api_ops}/{id}/rotate-secret"), Some(&t), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let notes = get(&h, "/settings/notifications", Some(&cookie)).await;
    assert!(
        notes.text.contains(&format!("href=\"/settings/webhooks/{sub_id}\"")),
        "{}",
        notes.text
    );
    assert!(notes.text.contains(&format!("href=\"{ops}/{id}\"")), "{}", notes.text);
    let r = h.send("DELETE", &format!("{api_ops}/{id}"), Some(&t), None).await;
    assert_eq!(r.status, 204);
    let notes = get(&h, "/settings/notifications", Some(&cookie)).await;
    assert!(
        !notes.text.contains(&format!("/{id}\"")),
        "no link to a deleted endpoint: {}",
        notes.text
    );
    assert!(notes.text.contains("has been deleted since"), "{}", notes.text);
    assert!(notes.text.contains(&format!("href=\"/settings/webhooks/{sub_id}\"")));
    h.stop().await;
}

#[tokio::test]
async fn a_banner_shows_while_an_endpoint_is_paused_or_failing_and_not_when_all_are_healthy() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let sub = h.subscribe(&t, "https://93.184.216.34/hooks").await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    // The operator endpoint receives the pause and resume notices: a receiver that takes
    // them, so it stays healthy.
    let ops_rx = Receiver::succeeding().await;
    let op = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/operator-webhooks",
            &t,
            json!({"name": "ops", "url": ops_rx.url}),
        )
        .await;
    let op_id = op.json["id"].as_str().unwrap().to_owned();
    let (url, _) = link(&h, &t, "ws_a").await;
    let (cookie, _) = sign_in(&url).await;
    let pages = ["/settings/", "/settings/operator-endpoints", "/settings/notifications"];
    for p in pages {
        let page = get(&h, p, Some(&cookie)).await;
        assert_eq!(page.status, 200, "{p}");
        assert!(!page.text.contains("id=\"attention\""), "{p}: all healthy, no banner");
    }
    let enabled = |path: String, on: bool| {
        let (h, t) = (&h, &t);
        async move {
            let r = h.json("PUT", &path, t, json!({"enabled": on})).await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    };
    let sub_path = format!("/public/v1/workspaces/ws_a/webhooks/{sub_id}/enabled");
    let op_path = format!("/public/v1/workspaces/ws_a/operator-webhooks/{op_id}/enabled");
    enabled(sub_path.clone(), false).await;
    for p in pages {
        let page = get(&h, p, Some(&cookie)).await;
        assert!(page.text.contains("id=\"attention\""), "{p}: {}", page.text);
        assert!(page.text.contains("1 endpoint is paused"), "{p}: {}", page.text);
        assert!(
            page.text
                .contains("href=\"/settings/notifications\">See the notifications"),
            "{p}"
        );
    }
    // An operator endpoint counts too.
    enabled(op_path.clone(), false).await;
    assert!(
        get(&h, "/settings/", Some(&cookie))
            .await
            .text
            .contains("2 endpoints are paused")
    );
    enabled(sub_path, true).await;
    enabled(op_path, true).await;
    assert!(
        !get(&h, "/settings/", Some(&cookie))
            .await
            .text
            .contains("id=\"attention\"")
    );

    // A subscription whose receiver fails: failing from its first failed attempt.
    let rx = Receiver::failing().await;
    let failing = h.subscribe(&t, &rx.url).await;
    let r = h
        .send(
            "POST",
            &format!(
                "/public/v1/workspaces/ws_a/webhooks/{}/test",
                failing["id"].as_str().unwrap()
            ),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert!(rx.wait_for_count(1, std::time::Duration::from_secs(20)).await);
    let mut text = String::new();
    for _ in 0..500 {
        text = get(&h, "/settings/", Some(&cookie)).await.text;
        if text.contains("1 endpoint is failing") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(text.contains("1 endpoint is failing"), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn the_favicon_is_served_not_a_404() {
    let h = Harness::start().await;
    let r = get(&h, "/favicon.ico", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "image/svg+xml");
    assert!(r.text.starts_with("<svg"));
    h.stop().await;
}
