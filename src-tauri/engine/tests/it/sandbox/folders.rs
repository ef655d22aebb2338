//! A server's private folder (its temporary files, caches, what the host fetched for it) is its
//! own, once: two names never share one, and a deleted server's folder goes with it, so a server
//! made later under its name starts with an empty one.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_folder_belongs_to_one_server_once() {
    if !landlock() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("private");
    // names that shared a folder before: `.c` and `_.c` were both `_.c`
    let both = || {
        config(vec![
            (".c", builtin("calculator")),
            ("_.c", builtin("calculator")),
        ])
    };
    let host = host(dir.path(), vec![], None).await;
    host.apply_config(&both()).await;
    for name in [".c", "_.c"] {
        assert_eq!(view(&host, name).status, ServerStatus::Running);
    }
    let folders: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(folders.len(), 2, "{folders:?}");
    let dot_c = root.join("%2Ec");
    assert!(dot_c.join("tmp").is_dir(), "{folders:?}");
    std::fs::write(dot_c.join("tmp/left-behind"), "of the first .c").unwrap();

    // deleted: its folder goes, the other's stays
    host.apply_config(&config(vec![("_.c", builtin("calculator"))]))
        .await;
    assert!(!dot_c.exists());
    assert!(root.join("_%2Ec/tmp").is_dir());

    // made again under the same name: an empty folder of its own
    host.apply_config(&both()).await;
    assert_eq!(view(&host, ".c").status, ServerStatus::Running);
    assert!(dot_c.join("tmp").is_dir());
    assert!(!dot_c.join("tmp/left-behind").exists());
    host.shutdown().await;
}
