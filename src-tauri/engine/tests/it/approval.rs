//! Which calls run at once, which ask, and what the answers do.

use serde_json::json;
use switchboard_engine::chat::approval::{Action, Decision, Policy};
use switchboard_engine::store::Approval;
use switchboard_engine::ChatEvent;
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[tokio::test]
async fn approval_read_only_runs_destructive_asks_denied_calls_never_run() {
    let r = rig(vec![
        ("calculator", builtin("calculator")),
        ("files", builtin("files")),
    ])
    .await;
    r.fake.set_responder(call_then_answer(vec![
        ("1", "calculator__add", json!({"a": 1, "b": 2})),
        (
            "2",
            "files__write_file",
            json!({"path": "denied.txt", "content": "no"}),
        ),
        (
            "3",
            "files__write_file",
            json!({"path": "edited.txt", "content": "original"}),
        ),
        ("4", "files__delete_file", json!({"path": "x"})),
    ]));
    let approver = Script::approving(vec![
        Decision::of(Action::Deny),
        Decision {
            action: Action::AllowOnce,
            arguments: Some(
                json!({"path": "edited.txt", "content": "edited"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        },
    ]);
    let mut engine = r.engine(5);
    engine.broker = approver.broker();
    set_policy(&engine, "files__delete_file", Policy::Deny);
    let (summary, events) = collecting(&engine, say("do it", None)).await;

    // only the two write_file calls were asked about, with the destructive warning
    let asked = approver.approval_requests();
    assert_eq!(
        asked.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        vec!["files__write_file", "files__write_file"]
    );
    assert!(asked.iter().all(|a| a.destructive));
    let requested = events
        .iter()
        .filter(|e| matches!(e, ChatEvent::ApprovalRequested { .. }))
        .count();
    assert_eq!(requested, 2);

    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let tc = &conv.tool_calls;
    assert_eq!(
        (tc[0].approval, tc[0].result.as_deref()),
        (Some(Approval::ReadOnly), Some("3"))
    );
    assert_eq!(tc[1].approval, Some(Approval::Denied));
    assert!(tc[1].is_error && tc[1].result.as_deref().unwrap().contains("declined"));
    assert_eq!(
        (tc[2].approval, tc[2].arguments_edited),
        (Some(Approval::Approved), true)
    );
    assert_eq!(
        tc[2].arguments,
        json!({"path": "edited.txt", "content": "edited"}),
        "the edited arguments are stored"
    );
    assert_eq!(tc[3].approval, Some(Approval::DeniedByPolicy));
    assert!(tc[3].is_error);
    // what actually happened on disk
    let sandbox = r.dir.path().join("sandbox");
    assert!(
        !sandbox.join("denied.txt").exists(),
        "a denied call never runs"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.join("edited.txt")).unwrap(),
        "edited"
    );
    // the model read why
    let tools = tool_messages(&r.fake.chat_requests()[1]);
    assert!(tools[1]["content"]
        .as_str()
        .unwrap()
        .contains("The user declined this tool call"));
    assert!(tools[3]["content"]
        .as_str()
        .unwrap()
        .contains("do not allow this tool"));
    r.host.shutdown().await;
}

#[tokio::test]
async fn allow_for_this_conversation_covers_later_turns_of_that_conversation_only() {
    // dynamic's tools carry no annotations: they ask
    let r = rig(vec![("dynamic", python("dynamic_server.py"))]).await;
    r.fake
        .set_responder(call_then_answer(vec![("1", "dynamic__t1", json!({}))]));
    let approver = Script::approving(vec![
        Decision::of(Action::AllowConversation),
        Decision::of(Action::AllowOnce),
    ]);
    let mut engine = r.engine(5);
    engine.broker = approver.broker();
    let first = engine
        .run_turn(say("a", None), &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    engine
        .run_turn(
            say("b", Some(first.conversation_id)),
            &|_| {},
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        approver.asked.lock().unwrap().len(),
        1,
        "asked once for that conversation"
    );
    engine
        .run_turn(say("c", None), &|_| {}, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        approver.asked.lock().unwrap().len(),
        2,
        "a new conversation asks again"
    );
    let conv = r.store.conversation(first.conversation_id).await.unwrap();
    let approvals: Vec<_> = conv
        .tool_calls
        .iter()
        .map(|t| t.approval.unwrap())
        .collect();
    assert_eq!(
        approvals,
        vec![Approval::ApprovedForChat, Approval::AllowedInChat]
    );
    r.host.shutdown().await;
}

/// The calls of one reply that need the user are asked about together: every question waits at
/// the same time (the window shows them on their cards at once), and however they are answered,
/// each runs and its result goes back to the model in the order of the calls.
#[tokio::test]
async fn the_calls_of_one_reply_are_asked_about_together_and_answered_in_any_order() {
    use switchboard_engine::chat::{Answer, Broker, Question};
    let r = rig(vec![("files", builtin("files"))]).await;
    let writes: Vec<(String, String)> = (1..=3)
        .map(|i| (format!("f{i}.txt"), format!("text {i}")))
        .collect();
    r.fake.set_responder(call_then_answer(
        writes
            .iter()
            .enumerate()
            .map(|(i, (path, content))| {
                (
                    ["1", "2", "3"][i],
                    "files__write_file",
                    json!({"path": path, "content": content}),
                )
            })
            .collect(),
    ));
    let broker = Broker::new();
    let mut engine = r.engine(5);
    engine.broker = broker.clone();
    let turn = tokio::spawn(async move {
        engine
            .run_turn(say("write three", None), &|_| {}, CancellationToken::new())
            .await
            .unwrap()
    });
    // all three wait at once (none was asked only after another was answered)
    let t = std::time::Instant::now();
    let pending = loop {
        let p = broker.pending();
        if p.len() == 3 {
            break p;
        }
        assert!(p.len() < 3, "{p:?}");
        assert!(t.elapsed() < READY, "never three questions at once: {p:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let mut asked: Vec<String> = pending
        .iter()
        .map(|(_, q)| match q {
            Question::Approval(a) => a.arguments["path"].as_str().unwrap().to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    asked.sort();
    assert_eq!(asked, ["f1.txt", "f2.txt", "f3.txt"]);
    // answered last first
    for (id, _) in pending.iter().rev() {
        broker
            .answer(*id, Answer::Approval(Decision::of(Action::AllowOnce)))
            .unwrap();
    }
    let summary = turn.await.unwrap();
    let conv = r.store.conversation(summary.conversation_id).await.unwrap();
    let sandbox = r.dir.path().join("sandbox");
    for (i, (path, content)) in writes.iter().enumerate() {
        assert_eq!(conv.tool_calls[i].approval, Some(Approval::Approved));
        assert!(!conv.tool_calls[i].is_error, "{:?}", conv.tool_calls[i]);
        assert_eq!(
            &std::fs::read_to_string(sandbox.join(path)).unwrap(),
            content
        );
    }
    let sent = tool_messages(&r.fake.chat_requests()[1]);
    let results: Vec<&str> = conv
        .tool_calls
        .iter()
        .map(|t| t.result.as_deref().unwrap())
        .collect();
    assert_eq!(sent.len(), 3);
    for (i, m) in sent.iter().enumerate() {
        assert_eq!(m["content"], results[i]);
    }
    r.host.shutdown().await;
}

/// "Always allow" on a card is remembered through the same path as every other change to the
/// settings: a model picked afterwards (the window sends only the model) keeps it, a restart reads
/// it back, and the next call runs without asking. Two changes at once both stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_survives_a_model_pick_a_restart_and_a_change_at_the_same_time() {
    use switchboard_engine::mcp::ToolKey;
    use switchboard_engine::secrets::Secrets;
    use switchboard_engine::settings::SettingsPatch;
    use switchboard_engine::{Places, Runtime};

    let fake = fake_ollama::FakeOllama::start().await;
    fake.set_responder(call_then_answer(vec![("1", "dynamic__t1", json!({}))]));
    let dir = tempfile::tempdir().unwrap();
    let places = Places {
        settings: dir.path().join("settings.json"),
        mcp: dir.path().join("mcp.json"),
        database: dir.path().join("db.sqlite3"),
        ..Places::in_dir(dir.path())
    };
    std::fs::write(
        &places.settings,
        json!({"llmUrl": fake.url, "model": "first"}).to_string(),
    )
    .unwrap();
    let dynamic = python("dynamic_server.py");
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"dynamic": {"command": dynamic.command, "args": dynamic.args}}})
            .to_string(),
    )
    .unwrap();
    let open = |broker| {
        let places = places.clone();
        let secrets = Secrets::file_only(dir.path().join("secrets"), "the test has no keyring");
        async move {
            let rt = Runtime::open_at(places, secrets, builtin_bin(), broker)
                .await
                .unwrap();
            rt.start_servers().await;
            rt
        }
    };

    // the card: "Always allow"
    let approver = Script::approving(vec![Decision::of(Action::AlwaysAllow)]);
    let rt = open(approver.broker()).await;
    collecting(&rt.chat_engine(None), say("a", None)).await;
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    // then the header's model picker, as the window sends it
    let patch: SettingsPatch = serde_json::from_value(json!({"model": "second"})).unwrap();
    let now = rt.change_settings(patch).await.unwrap();
    assert_eq!(now.model.as_deref(), Some("second"));
    // kept by the tool's key: the server's identity and the tool's own name
    let t1 = ToolKey::new(dynamic.identity(), "t1");
    assert_eq!(
        now.policy(&t1),
        Some(Policy::Allow),
        "a model pick keeps the card's choice: {:?}",
        now.standing_policies
    );
    assert!(now.tool_policies.is_empty(), "{:?}", now.tool_policies);
    // two changes at once (a card and the models dialog): both stay
    let t2 = ToolKey::new(dynamic.identity(), "t2");
    let (a, b) = tokio::join!(
        rt.change_settings(SettingsPatch::policy(&t2, Some(Policy::Deny))),
        rt.change_settings(
            serde_json::from_value(json!({"toolModes": {"second": "text"}})).unwrap()
        ),
    );
    a.unwrap();
    b.unwrap();
    rt.host.shutdown().await;
    drop(rt);

    // a restart: read back from the file, and the next call runs without asking
    let nobody = Script::approving(vec![]);
    let rt = open(nobody.broker()).await;
    let s = rt.settings.get();
    assert_eq!(s.model.as_deref(), Some("second"));
    assert_eq!(s.policy(&t1), Some(Policy::Allow));
    assert_eq!(s.policy(&t2), Some(Policy::Deny));
    assert_eq!(
        s.tool_modes["second"],
        switchboard_engine::settings::ToolMode::Text
    );
    let (summary, _) = collecting(&rt.chat_engine(None), say("b", None)).await;
    assert!(nobody.asked.lock().unwrap().is_empty(), "nobody was asked");
    let conv = rt
        .store
        .conversation(summary.conversation_id)
        .await
        .unwrap();
    assert_eq!(conv.tool_calls[0].approval, Some(Approval::AlwaysAllowed));
    assert!(!conv.tool_calls[0].is_error, "{:?}", conv.tool_calls[0]);
    rt.host.shutdown().await;
}

/// A settings file written by an older version keeps its policies by the name the model was
/// offered. At the next start each moves to its tool's key when that name leads to exactly one
/// tool of the server it was given for; one that does not (a server not configured now, another
/// program) stays where it was, applies to nothing, and is listed with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_versions_policies_move_to_their_tools_without_granting_anything_new() {
    use switchboard_engine::mcp::ToolKey;
    use switchboard_engine::secrets::Secrets;
    use switchboard_engine::{OldEntry, Places, Runtime};

    let fake = fake_ollama::FakeOllama::start().await;
    fake.set_responder(call_then_answer(vec![
        ("1", "dynamic__t1", json!({})),
        ("2", "dynamic__hang", json!({})),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let places = Places {
        settings: dir.path().join("settings.json"),
        mcp: dir.path().join("mcp.json"),
        database: dir.path().join("db.sqlite3"),
        ..Places::in_dir(dir.path())
    };
    let dynamic = python("dynamic_server.py");
    std::fs::write(
        &places.mcp,
        json!({"mcpServers": {"dynamic": {"command": dynamic.command, "args": dynamic.args}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        &places.settings,
        json!({"llmUrl": fake.url, "model": "m", "toolPolicies": {
            "dynamic__t1": {"policy": "allow", "server": dynamic.identity()},
            "dynamic__hang": "deny",
            "dynamic__log": {"policy": "allow", "server": "another program"},
            "gone__x": "allow",
        }})
        .to_string(),
    )
    .unwrap();
    let nobody = Script::approving(vec![]);
    let secrets = Secrets::file_only(dir.path().join("secrets"), "the test has no keyring");
    let rt = Runtime::open_at(places.clone(), secrets, builtin_bin(), nobody.broker())
        .await
        .unwrap();
    rt.start_servers().await;

    let key = |tool: &str| ToolKey::new(dynamic.identity(), tool);
    let s = rt.settings.get();
    assert_eq!(s.policy(&key("t1")), Some(Policy::Allow));
    assert_eq!(s.policy(&key("hang")), Some(Policy::Deny));
    assert_eq!(s.policy(&key("log")), None, "given to another program");
    assert_eq!(
        s.tool_policies.keys().collect::<Vec<_>>(),
        ["dynamic__log", "gone__x"]
    );
    // written back so
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&places.settings).unwrap()).unwrap();
    assert_eq!(
        saved["standingPolicies"][dynamic.identity()],
        json!({"t1": "allow", "hang": "deny"})
    );
    assert_eq!(
        saved["toolPolicies"].as_object().unwrap().len(),
        2,
        "{saved}"
    );
    // listed by server and tool; the old ones that stay, with why
    let views = rt.policy_views();
    let t1 = views
        .iter()
        .find(|v| v.tool.as_deref() == Some("t1"))
        .unwrap();
    assert_eq!(
        (t1.servers.clone(), t1.policy),
        (vec!["dynamic".to_string()], Policy::Allow)
    );
    let gone = views
        .iter()
        .find(|v| v.old_name.as_deref() == Some("gone__x"))
        .unwrap();
    assert_eq!(
        (gone.old, gone.tool.as_deref()),
        (Some(OldEntry::Waiting), None)
    );
    assert_eq!(views.len(), 4);

    // and they hold: t1 runs unasked, hang never runs
    let (summary, _) = collecting(&rt.chat_engine(None), say("go", None)).await;
    assert!(nobody.asked.lock().unwrap().is_empty(), "nobody was asked");
    let conv = rt
        .store
        .conversation(summary.conversation_id)
        .await
        .unwrap();
    assert_eq!(conv.tool_calls[0].approval, Some(Approval::AlwaysAllowed));
    assert_eq!(conv.tool_calls[1].approval, Some(Approval::DeniedByPolicy));
    rt.host.shutdown().await;
}
