//! The files `livesim serve` writes: a recording (`--record DIR`) never
//! replaces one an earlier run made, nor writes through a link planted at
//! its name; the certificate (`--tls`, by default at a predictable name in
//! the shared temp directory) is never written through a link either.

use serde_json::json;

use super::harness::{LIMIT, send, serve, until};
use super::serve_protocol::waiting_script;

/// A folder under the temp directory, unique in this process, removed when
/// dropped.
struct Folder(std::path::PathBuf);

impl Folder {
    fn new(label: &str) -> Folder {
        let path = super::Scratch::new(label).path().to_path_buf();
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A second run recording into the folder of a first would overwrite its
/// `connection-1.jsonl`: refused before serving, naming the file, which
/// is left as it was; a link at that name is refused the same way and
/// its target left alone.
#[cfg(unix)]
#[tokio::test]
async fn a_recording_of_an_earlier_run_is_never_replaced() {
    let dir = Folder::new("record-again");
    let script = super::Scratch::new("script.json");
    script.write(waiting_script().to_string().as_bytes());
    let earlier = dir.0.join("connection-1.jsonl");
    let mine = dir.0.join("mine.txt");
    std::fs::write(&mine, "mine").unwrap();
    let serve = async |what: &str| {
        // A server that started would wait for a client: the limit is
        // the failure.
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_livesim"))
            .arg("serve")
            .arg(script.path())
            .arg("--record")
            .arg(&dir.0)
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(LIMIT, run)
            .await
            .unwrap_or_else(|_| panic!("{what}: livesim serve started serving"))
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "livesim serve: {} is a recording from an earlier run, which this one would \
                 overwrite",
                earlier.display()
            )),
            "{what}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{what}: nothing served");
    };
    std::fs::write(&earlier, "earlier").unwrap();
    serve("a recording").await;
    assert_eq!(std::fs::read_to_string(&earlier).unwrap(), "earlier");
    std::fs::remove_file(&earlier).unwrap();
    std::os::unix::fs::symlink(&mine, &earlier).unwrap();
    serve("a link").await;
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
}

/// A link put at a connection's recording after the server started is not
/// written through: that connection is not recorded, the log says why, and
/// the script still plays.
#[cfg(unix)]
#[tokio::test]
async fn a_link_planted_while_serving_is_not_written_through() {
    let dir = Folder::new("record-link");
    let served = serve(&waiting_script(), &["--record", dir.0.to_str().unwrap()]).await;
    let mine = dir.0.join("mine.txt");
    std::fs::write(&mine, "mine").unwrap();
    let link = dir.0.join("connection-1.jsonl");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(served.url.as_str())
        .await
        .unwrap();
    send(&mut ws, json!({ "setup": { "model": "models/test" } })).await;
    until(&mut ws, "setupComplete").await;
    send(
        &mut ws,
        json!({ "clientContent": { "turns": [{ "role": "user", "parts": [{ "text": "hi" }] }], "turnComplete": true } }),
    )
    .await;
    until(&mut ws, "serverContent").await;
    super::harness::hang_up(&mut ws).await;
    let ended = served.finish().await;
    assert_eq!(ended.code, Some(0), "{}", ended.output());
    assert!(
        ended.stderr.contains(&format!(
            "#1 cannot record: {}: File exists",
            link.display()
        )),
        "{}",
        ended.stderr
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
}

/// The certificate replaces a link at its path rather than writing into
/// the file the link points to.
#[cfg(unix)]
#[tokio::test]
async fn the_certificate_is_never_written_through_a_link() {
    let dir = Folder::new("cert-link");
    let mine = dir.0.join("mine.txt");
    std::fs::write(&mine, "mine").unwrap();
    let cert = dir.0.join("cert.pem");
    std::os::unix::fs::symlink(&mine, &cert).unwrap();
    let mut served = serve(
        &waiting_script(),
        &["--tls", "--cert-out", cert.to_str().unwrap()],
    )
    .await;
    served.line().await; // the base URL
    let said = served.line().await;
    assert!(
        said.starts_with(&format!("livesim serve: certificate {}", cert.display())),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    let pem = std::fs::read_to_string(&cert).unwrap();
    assert!(std::fs::symlink_metadata(&cert).unwrap().is_file());
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    assert!(!pem.contains("PRIVATE KEY"), "{pem}");
    // No file written on the way is left beside it.
    let mut names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["cert.pem", "mine.txt"]);
}
