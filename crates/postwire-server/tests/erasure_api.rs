//! Erasure over HTTP (`DELETE …/posts/{postId}/payloads`, `…/integrations/{id}/payloads`),
//! against a real server and a verifying loopback receiver: the answer counts what was
//! erased and cancelled, a repeat answers zeros, the deliveries list keeps the metadata
//! and says `payloadErased`, an unfinished delivery is `cancelled`, a resend is `410
//! payload_erased`, the post's next event is delivered, and the Settings screen's log
//! says "payload erased" where the payload was. The bytes leaving the files are tested
//! in the sender's store tests.

mod common;

use common::{Harness, eventually, receiver};
use postwire_core::Secret;
use postwire_server::tokens::Scope;

#[tokio::test]
async fn erasure_keeps_the_metadata_cancels_what_is_unfinished_and_refuses_a_resend() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{}", sub["id"].as_str().unwrap());
    let down = h.subscribe(&t, "http://127.0.0.1:1/refused").await;
    let down_base = format!("/public/v1/workspaces/ws_a/webhooks/{}", down["id"].as_str().unwrap());
    h.post_event("ws_a", "post_e", "ext_e", "scheduled").await;
    h.post_event("ws_a", "post_e", "ext_e", "published").await;
    eventually("both delivered", || rx.stats().handled == 2).await;
    let mut delivered = Vec::new();
    for _ in 0..200 {
        let list = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await;
        let data = list.json["data"].as_array().unwrap().clone();
        if data.len() == 2 && data.iter().all(|d| d["state"] == "delivered") {
            delivered = data;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(delivered.len(), 2, "both deliveries finished");

    let path = "/public/v1/workspaces/ws_a/posts/post_e/payloads";
    let reader = h.token(&[Scope::WebhooksRead], &["ws_a"]).await;
    h.send("DELETE", path, Some(&reader), None)
        .await
        .assert_error(403, "insufficient_scope");
    let r = h.send("DELETE", path, Some(&t), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Two events; the unreachable subscription's two deliveries were unfinished.
    assert_eq!(
        (r.json["erased"].as_u64(), r.json["cancelled"].as_u64()),
        (Some(2), Some(2))
    );
    let again = h.send("DELETE", path, Some(&t), None).await;
    assert_eq!(
        (again.json["erased"].as_u64(), again.json["cancelled"].as_u64()),
        (Some(0), Some(0))
    );
    let account = h
        .send(
            "DELETE",
            "/public/v1/workspaces/ws_a/integrations/int_none/payloads",
            Some(&t),
            None,
        )
        .await;
    assert_eq!(account.status, 200, "{}", account.text);
    assert_eq!(account.json["erased"], 0);

    let list = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await;
    for (d, before) in list.json["data"].as_array().unwrap().iter().zip(&delivered) {
        assert_eq!(d["payloadErased"], true);
        assert_eq!(
            (&d["id"], &d["state"], &d["attempts"]),
            (&before["id"], &before["state"], &before["attempts"])
        );
    }
    let cancelled = h.send("GET", &format!("{down_base}/deliveries"), Some(&t), None).await;
    let states: Vec<&str> = cancelled.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["cancelled", "cancelled"], "{}", cancelled.text);

    // The Settings screen: no payload, no Resend button, the words instead.
    let page = settings_page(&h, &t, sub["id"].as_str().unwrap()).await;
    assert_eq!(page.matches("payload erased").count(), 2, "{page}");
    assert!(!page.contains("ext_e"), "the erased body is not shown");
    assert!(!page.contains("/resend"), "no resend of an erased delivery");

    let first = delivered[0]["id"].as_str().unwrap();
    h.send("POST", &format!("{base}/deliveries/{first}/resend"), Some(&t), None)
        .await
        .assert_error(410, "payload_erased");

    // The post's next event is delivered (nothing of the key is left unfinished).
    let next = h.post_event("ws_a", "post_e", "ext_e", "publishing").await;
    eventually("the next event arrives", || rx.stats().events.contains_key(&next)).await;
    h.stop().await;
    rx.stop().await;
}

/// The Settings page of subscription `id` of `ws_a`, signed in through a magic link.
async fn settings_page(h: &Harness, token: &str, id: &str) -> String {
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = h
        .send("POST", "/public/v1/workspaces/ws_a/portal-sessions", Some(token), None)
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let link = r.json["url"]
        .as_str()
        .unwrap()
        .split("link=")
        .nth(1)
        .unwrap()
        .to_owned();
    let login = http
        .post(format!("{}/settings/login", h.base))
        .header("origin", &h.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("link={link}"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = http
        .get(format!("{}/settings/webhooks/{id}", h.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    page.text().await.unwrap()
}
