//! Benchmarks driven through the real window (`make bench-window`; `make test` skips them): they
//! print what they measure and pass or fail only on whether the window did its job.

use std::time::Duration;

use crate::app::*;
use crate::long_conversation::long_conversation;

/// Opens a 10,000-message conversation from the list, again and again (another conversation in
/// between), and prints the time from the click until its last page is in the page and two
/// animation frames have passed (the frame that paints it has been produced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run via `make bench-window`"]
async fn bench_first_paint_of_a_10000_message_conversation() {
    let (home, _config) = app_home();
    let (short_id, long) = {
        let store = app_store(home.path()).await;
        let mut short = long_conversation(4);
        short.title = "a short one".into();
        short.updated_at = 1;
        let short = store.import_json(&short, None).await.unwrap();
        store.mark_continued(short).await.unwrap();
        let id = store
            .import_json(&long_conversation(10_000), None)
            .await
            .unwrap();
        store.mark_continued(id).await.unwrap();
        (short, id)
    };
    let App { c, driver: _driver } = App::launch(home.path()).await;
    wait_css(&c, "#conversation-list .conv[data-id]").await;
    let open = |id: i64, title: &str, items: usize| {
        format!(
            "const done = arguments[arguments.length - 1];
             const t0 = performance.now();
             document.querySelector('#conversation-list .conv[data-id=\"{id}\"]').click();
             const check = () => {{
               if (document.querySelectorAll('#messages .msg').length >= {items}
                   && document.querySelector('#chat-title').textContent === '{title}')
                 requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
               else requestAnimationFrame(check);
             }};
             requestAnimationFrame(check);"
        )
    };
    let mut times = Vec::new();
    for _ in 0..7 {
        c.execute_async(&open(short_id, "a short one", 4), vec![])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let ms = c
            .execute_async(&open(long, "the long one", 300), vec![])
            .await
            .unwrap();
        times.push(ms.as_f64().unwrap());
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "window: a 10,000-message conversation opened and painted in {:.0} ms (median of {}; min {:.0}, max {:.0})",
        times[times.len() / 2],
        times.len(),
        times[0],
        times[times.len() - 1]
    );
    c.close().await.unwrap();
}

/// The memory of the app's processes (the app, WebKit's web and network processes, its MCP
/// servers: every process under the WebDriver driver but the drivers themselves), once they have
/// been idle for two seconds in a row: a row per process (label, RSS and PSS in KiB).
async fn memory_when_idle(driver: &Driver) -> Vec<(String, u64, u64)> {
    let mut last = None;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let pids = driver.app_processes();
        let ticks: u64 = pids.iter().map(|(pid, _)| cpu_ticks(*pid)).sum();
        let idle = last.is_some_and(|l| ticks - l < 5);
        last = Some(ticks);
        if idle {
            return pids
                .into_iter()
                .filter_map(|(pid, label)| {
                    let rollup =
                        std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
                    let field = |name: &str| {
                        rollup
                            .lines()
                            .find(|l| l.starts_with(name))
                            .and_then(|l| l.split_whitespace().nth(1))
                            .and_then(|n| n.parse::<u64>().ok())
                            .unwrap_or(0)
                    };
                    Some((label, field("Rss:"), field("Pss:")))
                })
                .collect();
        }
    }
}

fn cpu_ticks(pid: i32) -> u64 {
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the command
    stat_fields(pid)
        .get(11..13)
        .map_or(0, |f| f.iter().filter_map(|n| n.parse::<u64>().ok()).sum())
}

fn print_memory(what: &str, rows: &[(String, u64, u64)]) {
    eprintln!("memory, {what}:");
    eprintln!("  {:<28} {:>9} {:>9}", "process", "RSS MiB", "PSS MiB");
    for (label, rss, pss) in rows {
        eprintln!(
            "  {label:<28} {:>9.1} {:>9.1}",
            *rss as f64 / 1024.0,
            *pss as f64 / 1024.0
        );
    }
    let (rss, pss) = rows
        .iter()
        .fold((0, 0), |(r, p), (_, rss, pss)| (r + rss, p + pss));
    eprintln!(
        "  {:<28} {:>9.1} {:>9.1}",
        "total",
        rss as f64 / 1024.0,
        pss as f64 / 1024.0
    );
}

/// The app's memory at idle with an empty chat, then with a 10,000-message conversation open
/// (its last page shown), built-in servers on, no LLM reachable: RSS and PSS per process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run via `make bench-window`"]
async fn bench_memory_idle_and_with_a_10000_message_conversation_open() {
    let (home, config_dir) = app_home();
    std::fs::write(
        config_dir.join("settings.json"),
        serde_json::json!({"llmUrl": "http://127.0.0.1:9"}).to_string(),
    )
    .unwrap();
    let long = {
        let store = app_store(home.path()).await;
        let id = store
            .import_json(&long_conversation(10_000), None)
            .await
            .unwrap();
        store.mark_continued(id).await.unwrap();
        id
    };
    let App { c, driver } = App::launch_with_servers(home.path(), 3).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    print_memory("idle, an empty chat", &memory_when_idle(&driver).await);
    click(&c, &format!("#conversation-list .conv[data-id='{long}']")).await;
    wait_until(
        &c,
        "document.querySelectorAll('#messages .msg').length >= 300",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    print_memory(
        "idle, a 10,000-message conversation open",
        &memory_when_idle(&driver).await,
    );
    c.close().await.unwrap();
}
