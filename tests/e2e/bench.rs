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
