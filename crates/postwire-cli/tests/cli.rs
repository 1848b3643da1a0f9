//! Runs the real `postwire` binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS: &str = "1614265330";
const BODY: &str = r#"{"test": 2432232314}"#;
const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

fn postwire(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(args)
        .env_remove("POSTWIRE_SECRET")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap().trim_end().to_owned()
}

#[test]
fn secret_new_prints_a_usable_whsec_secret() {
    let out = postwire(&["secret", "new"], b"");
    assert!(out.status.success());
    let s = stdout(&out);
    assert!(s.starts_with("whsec_") && s.len() == 6 + 44, "{s}");
    let other = stdout(&postwire(&["secret", "new"], b""));
    assert_ne!(s, other);
    assert!(!postwire(&["secret", "new", "--bytes", "8"], b"").status.success());
}

#[test]
fn sign_matches_the_reference_vector_from_stdin_and_file() {
    let out = postwire(
        &["sign", "--secret", SECRET, "--id", ID, "--timestamp", TS],
        BODY.as_bytes(),
    );
    assert_eq!(stdout(&out), SIG);
    let dir = std::env::temp_dir().join(format!("postwire-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body.json");
    std::fs::write(&file, BODY).unwrap();
    let out = postwire(
        &[
            "sign",
            "--secret",
            SECRET,
            "--id",
            ID,
            "--timestamp",
            TS,
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(stdout(&out), SIG);
}

#[test]
fn sign_with_two_secrets_gives_two_signatures() {
    let other = stdout(&postwire(&["secret", "new"], b""));
    let out = postwire(
        &[
            "sign",
            "--secret",
            &other,
            "--secret",
            SECRET,
            "--id",
            ID,
            "--timestamp",
            TS,
        ],
        BODY.as_bytes(),
    );
    let value = stdout(&out);
    let parts: Vec<&str> = value.split(' ').collect();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1], SIG);
}

#[test]
fn verify_ok_and_each_failure_code() {
    let base = [
        "verify",
        "--secret",
        SECRET,
        "--id",
        ID,
        "--timestamp",
        TS,
        "--signature",
        SIG,
    ];
    let ok = postwire(&[&base[..], &["--now", TS]].concat(), BODY.as_bytes());
    assert!(ok.status.success());
    assert_eq!(stdout(&ok), "ok");

    let tampered = postwire(&[&base[..], &["--now", TS]].concat(), br#"{"test":2432232314}"#);
    assert_eq!(tampered.status.code(), Some(1));
    assert!(
        stdout(&tampered).starts_with("invalid_signature: "),
        "{}",
        stdout(&tampered)
    );
    assert!(stdout(&tampered).contains("raw body"));

    let old = postwire(&[&base[..], &["--now", "1614265631"]].concat(), BODY.as_bytes());
    assert!(stdout(&old).starts_with("timestamp_too_old: "));
    let new = postwire(&[&base[..], &["--now", "1614265029"]].concat(), BODY.as_bytes());
    assert!(stdout(&new).starts_with("timestamp_too_new: "));

    let bad_ts = postwire(
        &[
            "verify",
            "--secret",
            SECRET,
            "--id",
            ID,
            "--timestamp",
            "12abc",
            "--signature",
            SIG,
        ],
        BODY.as_bytes(),
    );
    assert_eq!(bad_ts.status.code(), Some(1));
    assert!(stdout(&bad_ts).starts_with("invalid_header: "));
}

#[test]
fn verify_accepts_any_of_several_secrets() {
    let other = stdout(&postwire(&["secret", "new"], b""));
    let out = postwire(
        &[
            "verify",
            "--secret",
            &other,
            "--secret",
            SECRET,
            "--id",
            ID,
            "--timestamp",
            TS,
            "--signature",
            SIG,
            "--now",
            TS,
        ],
        BODY.as_bytes(),
    );
    assert_eq!(stdout(&out), "ok");
}

#[test]
fn a_bad_secret_is_a_usage_error_that_does_not_echo_it() {
    let out = postwire(&["sign", "--secret", "whsec_not*base64", "--id", ID], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("invalid signing secret") && !err.contains("not*base64"),
        "{err}"
    );
}

/// `keys new`, then `sign` with the `whsk_` key and `verify` with the `whpk_` key (`v1a`).
#[test]
fn keys_new_signs_with_whsk_and_verifies_with_whpk() {
    let out = postwire(&["keys", "new"], b"");
    assert!(out.status.success());
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let (sk, pk) = (lines[0], lines[1]);
    assert!(sk.starts_with("whsk_") && sk.len() == 5 + 44, "{sk}");
    assert!(pk.starts_with("whpk_") && pk.len() == 5 + 44, "{pk}");
    assert_ne!(stdout(&postwire(&["keys", "new"], b"")), text);

    // Both kinds at once: a v1 entry, then a v1a entry.
    let sig = stdout(&postwire(
        &[
            "sign",
            "--secret",
            SECRET,
            "--secret",
            sk,
            "--id",
            ID,
            "--timestamp",
            TS,
        ],
        BODY.as_bytes(),
    ));
    let entries: Vec<&str> = sig.split(' ').collect();
    assert_eq!(entries.len(), 2, "{sig}");
    assert_eq!(entries[0], SIG);
    assert!(entries[1].starts_with("v1a,") && entries[1].len() == 4 + 88, "{sig}");

    let verify = |key: &str, signature: &str, body: &str| {
        let out = postwire(
            &[
                "verify",
                "--secret",
                key,
                "--id",
                ID,
                "--timestamp",
                TS,
                "--signature",
                signature,
                "--now",
                TS,
            ],
            body.as_bytes(),
        );
        stdout(&out)
    };
    assert_eq!(verify(pk, &sig, BODY), "ok");
    assert_eq!(verify(pk, entries[1], BODY), "ok");
    assert!(verify(pk, entries[1], "{}").starts_with("invalid_signature:"));
    // The public key does not verify the v1 entry alone, and says why.
    let v1_only = verify(pk, SIG, BODY);
    assert!(
        v1_only.starts_with("invalid_signature:") && v1_only.contains("v1a"),
        "{v1_only}"
    );
    // Another pair's public key refuses it.
    let other = stdout(&postwire(&["keys", "new"], b""));
    let other_pk = other.lines().nth(1).unwrap();
    assert!(verify(other_pk, entries[1], BODY).starts_with("invalid_signature:"));

    // A signing key is refused where a verifying key belongs, without echoing it.
    let out = postwire(
        &[
            "verify",
            "--secret",
            sk,
            "--id",
            ID,
            "--timestamp",
            TS,
            "--signature",
            &sig,
        ],
        BODY.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("whpk_") && !err.contains(&sk[5..]), "{err}");
    // A malformed signing key is a usage error that does not echo it.
    let out = postwire(&["sign", "--secret", "whsk_not*base64", "--id", ID], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8(out.stderr).unwrap().contains("not*base64"));
}

/// `postwire …` run in `dir`, with no database settings from the environment.
fn postwire_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(args)
        .current_dir(dir)
        .env_remove("POSTWIRE_DB")
        .env_remove("POSTWIRE_DATABASE_URL")
        .env_remove("POSTWIRE_CONFIG")
        .output()
        .unwrap()
}

#[test]
fn commands_run_where_there_is_no_database_refuse_and_name_the_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let expected = dir.path().join("postwire.db");
    for args in [
        &["token", "create", "--workspace", "ws_1", "--scope", "webhooks:write"][..],
        &["token", "list"][..],
        &["token", "revoke", "tok_1"][..],
        &["portal", "link", "--workspace", "ws_1"][..],
    ] {
        let out = postwire_in(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("no database at {}", expected.display())) && err.contains("postwire serve"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!expected.exists(), "{args:?} made a database");
    }
    // Asked to, `token create` makes it, and says where.
    let out = postwire_in(
        dir.path(),
        &[
            "token",
            "create",
            "--create-database",
            "--workspace",
            "ws_1",
            "--scope",
            "webhooks:write",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(expected.exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("in {}", expected.display())), "{err}");
    // Now the other commands find it.
    let out = postwire_in(dir.path(), &["portal", "link", "--workspace", "ws_1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("/settings/login?link="));
}
