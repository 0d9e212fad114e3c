//! `--principal-token-env`: the reference agent served by address with a token per principal
//! keeps their sessions apart (R-TENANT-1); a malformed or weak one stops it before it listens.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use acp_inject_remote::Endpoint;
use acp_inject_transport::ConnectOptions;

const ALICE: &str = "alice-0123456789abcdef";
const BOB: &str = "bob-0123456789abcdef00";

fn agent(principals: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_acp-inject-agent"));
    command.args(["--listen", "127.0.0.1:0"]).env("A", ALICE).env("B", BOB).env("SHORT", "short");
    for p in principals {
        command.args(["--principal-token-env", p]);
    }
    command
}

/// The agent process, killed and waited for however the test ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn each_principal_lists_its_own_sessions() {
    let mut child = Running(agent(&["alice=A", "bob=B"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap());
    let mut url = String::new();
    BufReader::new(child.0.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let url = url.trim().replacen("http", "ws", 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let outcome = runtime.block_on(async {
        let alice = Endpoint::new(&url).bearer(ALICE).connect(ConnectOptions::default()).await.unwrap();
        let bob = Endpoint::new(&url).bearer(BOB).connect(ConnectOptions::default()).await.unwrap();
        let a = alice.new_session("/a", vec![], vec![]).await.unwrap();
        let b = bob.new_session("/b", vec![], vec![]).await.unwrap();
        let ids = |page: (Vec<acp_inject_core::wire::SessionInfo>, Option<String>)| {
            page.0.into_iter().map(|s| s.session_id).collect::<Vec<_>>()
        };
        let seen = (ids(alice.list_sessions(None, None).await.unwrap()), ids(bob.list_sessions(None, None).await.unwrap()));
        let stranger = Endpoint::new(&url).bearer("nobody-0123456789abcdef").connect(ConnectOptions::default()).await;
        (seen, vec![a.id().clone()], vec![b.id().clone()], stranger.is_err())
    });
    drop(child);
    let ((alices, bobs), a, b, refused) = outcome;
    assert_eq!((alices, bobs), (a, b));
    assert!(refused, "a token nobody was given is refused");
}

#[test]
fn a_malformed_or_weak_principal_token_stops_the_agent() {
    for (given, says) in [("alice", "expected NAME=VAR"), ("alice=SHORT", "too short"), ("alice=UNSET_VAR", "unset")] {
        let out = agent(&[given]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{given}: {stderr}");
    }
}
