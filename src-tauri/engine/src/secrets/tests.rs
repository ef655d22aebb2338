use super::*;

#[test]
fn values_round_trip_and_never_show_themselves() {
    let v: BTreeMap<String, SecretValue> = serde_json::from_str(
            r#"{"a": "plain", "b": {"secret": "keyring:ab12"}, "c": {"newSecret": "typed"}, "d": {"secret": "file:x"}}"#,
        )
        .unwrap();
    assert_eq!(v["a"], SecretValue::Plain("plain".into()));
    assert_eq!(v["b"], SecretValue::Stored("keyring:ab12".into()));
    assert_eq!(v["c"], SecretValue::New("typed".into()));
    let back = serde_json::to_string(&v).unwrap();
    assert!(
        !back.contains("typed"),
        "a new value is never written: {back}"
    );
    assert!(back.contains(r#""b":{"secret":"keyring:ab12"}"#), "{back}");
    assert!(!format!("{v:?}").contains("plain") && !format!("{v:?}").contains("typed"));
    assert_eq!(v["b"].redacted(true), SecretValue::Stored("keyring".into()));
    assert_eq!(v["d"].redacted(false), SecretValue::Stored("file".into()));
    assert_eq!(v["a"].redacted(false), v["a"]);
    assert_eq!(v["a"].redacted(true), SecretValue::Stored("config".into()));
    assert_eq!(v["a"].exported(false), "plain");
    assert_eq!(v["a"].exported(true), EXPORT_PLACEHOLDER);
    assert_eq!(v["b"].exported(false), EXPORT_PLACEHOLDER);
    assert_eq!(
        SecretValue::from_import(&serde_json::json!({"secret": "keyring:ab12"})),
        None
    );
    assert_eq!(
        SecretValue::from_import(&serde_json::json!(EXPORT_PLACEHOLDER)),
        None
    );
    assert_eq!(
        SecretValue::from_import(&serde_json::json!(3)),
        Some("3".into())
    );
}

#[test]
fn references_parse() {
    assert_eq!(
        parse_reference("keyring:0af3"),
        Some((Place::Keyring, "0af3"))
    );
    assert_eq!(parse_reference("file:a-b_c"), Some((Place::File, "a-b_c")));
    for bad in ["keyring:", "vault:x", "keyring", "file:a/b", "file:../x"] {
        assert_eq!(parse_reference(bad), None, "{bad}");
    }
    assert_eq!(new_id().len(), 32);
    assert_ne!(new_id(), new_id());
}

#[test]
fn secret_looking_names() {
    for n in [
        "API_KEY",
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "DB_PASSWORD",
        "CLIENT_SECRET",
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "apikey",
        "BRAVE_API_KEY",
        "AUTH",
    ] {
        assert!(looks_secret(n), "{n}");
    }
    for n in ["PATH", "HOME", "LOG_LEVEL", "NODE_ENV", "PORT", "KEYBOARD"] {
        assert!(!looks_secret(n), "{n}");
    }
}

#[tokio::test]
async fn the_file_store_is_private_and_keeps_values_apart() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("secrets");
    let s = Secrets::file_only(dir.clone(), "tests");
    assert_eq!(s.status().store, StatusPlace::File);
    let a = s.store("Switchboard: a", "alpha").await.unwrap();
    let b = s.store("Switchboard: b", "beta").await.unwrap();
    assert!(a.starts_with("file:") && b.starts_with("file:") && a != b);
    assert_eq!(s.read(&a).await.unwrap(), "alpha");
    assert_eq!(
        s.resolve(&SecretValue::Stored(b.clone())).await.unwrap(),
        "beta"
    );
    assert!(is_private(&dir) && is_private(&s.file_path()));
    assert_eq!(s.status().in_file, 2);
    s.delete(&a).await.unwrap();
    assert!(matches!(s.read(&a).await, Err(SecretError::Missing(..))));
    s.delete(&a).await.unwrap();
    assert!(matches!(
        s.read("keyring:zz").await,
        Err(SecretError::NoKeyring(..))
    ));
    assert!(matches!(
        s.read("nonsense").await,
        Err(SecretError::BadReference(_))
    ));
    // made private again when found open
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(s.file_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(s.read(&b).await.unwrap(), "beta");
        assert!(is_private(&dir) && is_private(&s.file_path()));
    }
}

/// A keyring in memory that can be made to fail, to see the fallback.
#[derive(Default)]
struct Flaky {
    items: Mutex<BTreeMap<String, String>>,
    broken: std::sync::atomic::AtomicBool,
}

impl SecretStore for Flaky {
    fn get(&self, id: &str) -> Result<Option<String>, SecretError> {
        Ok(self.items.lock().unwrap().get(id).cloned())
    }
    fn set(&self, id: &str, _: &str, v: &str) -> Result<(), SecretError> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SecretError::Keyring(
                "org.freedesktop.Secret.Error.IsLocked".into(),
            ));
        }
        self.items.lock().unwrap().insert(id.into(), v.into());
        Ok(())
    }
    fn delete(&self, id: &str) -> Result<(), SecretError> {
        self.items.lock().unwrap().remove(id);
        Ok(())
    }
}

#[tokio::test]
async fn a_failing_keyring_falls_back_to_the_file_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let k = Arc::new(Flaky::default());
    let s = Secrets::with_store(d.path().join("s"), k.clone());
    assert_eq!(s.status().store, StatusPlace::Unknown);
    let a = s.store("a", "alpha").await.unwrap();
    assert!(a.starts_with("keyring:"), "{a}");
    assert_eq!(s.status().store, StatusPlace::Keyring);
    assert_eq!(k.items.lock().unwrap().len(), 1);
    k.broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let b = s.store("b", "beta").await.unwrap();
    assert!(b.starts_with("file:"), "{b}");
    let st = s.status();
    assert_eq!(st.store, StatusPlace::File);
    assert!(st.reason.unwrap().contains("IsLocked"));
    assert_eq!(st.in_file, 1);
    assert_eq!(s.read(&b).await.unwrap(), "beta");
}

#[tokio::test]
async fn keep_markers_take_the_fields_value_or_a_copy() {
    let d = tempfile::tempdir().unwrap();
    let s = Secrets::file_only(d.path().join("s"), "tests");
    let r = s.store("x", "v1").await.unwrap();
    let source = |name: &str| match name {
        "A" => Some(SecretValue::Stored(r.clone())),
        "B" => Some(SecretValue::Plain("hand".into())),
        _ => None,
    };
    let mut a = SecretValue::Stored("keyring".into());
    let mut b = SecretValue::Stored("config".into());
    let mut c = SecretValue::Plain("typed".into());
    adopt(
        &s,
        [
            ("A".to_string(), &mut a),
            ("B".into(), &mut b),
            ("C".into(), &mut c),
        ],
        source,
        false,
    )
    .await
    .unwrap();
    assert_eq!(a, SecretValue::Stored(r.clone()));
    assert_eq!(b, SecretValue::New("hand".into()));
    assert_eq!(c, SecretValue::Plain("typed".into()));
    let mut a = SecretValue::Stored("anything".into());
    adopt(&s, [("A".to_string(), &mut a)], source, true)
        .await
        .unwrap();
    assert_eq!(a, SecretValue::New("v1".into()), "a copy reads the value");
    let mut gone = SecretValue::Stored("keyring".into());
    assert!(matches!(
        adopt(&s, [("Z".to_string(), &mut gone)], source, false).await,
        Err(SecretError::NothingToKeep(_))
    ));
    let mut created = vec![];
    s.seal(&mut a, false, "copy", &mut created).await.unwrap();
    assert_eq!(created.len(), 1);
    assert_ne!(a, SecretValue::Stored(r));
    let mut plain = SecretValue::Plain("p".into());
    s.seal(&mut plain, false, "env", &mut created)
        .await
        .unwrap();
    assert_eq!(
        plain,
        SecretValue::Plain("p".into()),
        "a plain env value stays"
    );
    s.seal(&mut plain, true, "header", &mut created)
        .await
        .unwrap();
    assert!(plain.reference().is_some(), "a plain header is moved");
}
