//! What attaching a photo costs (`cargo bench -p switchboard-engine --bench attach`): a
//! 12-megapixel JPEG (4000×3000, with EXIF) from its bytes to ready to send, as the window's
//! paste, drop or file picker runs it: the type sniffed, the header checked against the limits,
//! decoded, turned upright, downscaled to 1024 px, re-encoded without metadata, a thumbnail made,
//! hashed, its file written (and synced) in a store on disk and its row added; then its base64
//! for the request, as a turn reads it back.
//!
//! The target (issue 24): under 300 ms.

use std::time::Duration;

use base64::Engine as _;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use switchboard_engine::chat::{attach_file, AttachedFile};
use switchboard_engine::store::Store;

#[path = "../tests/it/support/samples.rs"]
mod samples;

fn attach(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let photo = samples::photo_jpeg(4000, 3000);
    eprintln!("the photo: {:.1} MB", photo.len() as f64 / 1e6);
    let mut g = c.benchmark_group("attach");
    g.sample_size(20).measurement_time(Duration::from_secs(20));
    // a fresh store each time, so the file is written each time (the same photo is kept once)
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        let store = rt
            .block_on(Store::open(&dir.path().join("db.sqlite3")))
            .unwrap();
        (dir, store)
    };
    g.bench_function("a 12-megapixel photo attached and ready to send", |b| {
        b.iter_batched(
            fresh,
            |(dir, store)| {
                rt.block_on(async {
                    let AttachedFile::Image { image, .. } =
                        attach_file(&store, "IMG_0001.jpg", photo.clone(), 1024)
                            .await
                            .unwrap()
                    else {
                        panic!("an image")
                    };
                    let kept = store.kept_image(&image.sha256).await.unwrap();
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&kept.bytes);
                    assert!(b64.len() > 1000);
                });
                (dir, store)
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("decode, fit and re-encode only (media::prepare)", |b| {
        b.iter(|| switchboard_engine::media::prepare(&photo, 1024).unwrap())
    });
    g.finish();
}

criterion_group!(benches, attach);
criterion_main!(benches);
