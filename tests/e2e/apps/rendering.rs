//! The official MCP Apps examples (npm @modelcontextprotocol/server-*, 2.0.x) that draw what
//! their call gave them or what they fetch through their own server, each shown on its card:
//! - cohort-heatmap: its heatmap comes from its own data call (asked once, in its name), and
//!   another metric is drawn again from a new call, unasked;
//! - shadertoy: the shader the model wrote runs on the frame's WebGL 2 canvas (its pixels are
//!   read back);
//! - sheet-music: the ABC notation the model wrote is drawn as a score; the site it names for its
//!   sounds stays closed (its server does not let its apps reach any), and its card says so.

use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn cohort_heatmap_draws_its_data_and_another_metric_unasked() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "cohort-heatmap",
        "cohort-heatmap__get-cohort-data",
        json!({}),
    )
    .await;
    show_app(&c, "show it").await;
    // its own data call: asked on its card, in its name
    wait_css(&c, ".tool-card .app-box .app-approval").await;
    assert_eq!(
        text_content(&c, ".app-approval .app-asker").await,
        "The app “Cohort Heatmap” of cohort-heatmap"
    );
    click(&c, ".app-approval [data-action='allowConversation']").await;
    const DRAWN: &str = "!document.body.innerText.includes('Loading') && document.querySelectorAll('body *').length > 100";
    in_frame_until(&c, DRAWN).await;
    let before = in_app_eval(&c, "document.body.innerText").await;
    // another metric: a new call of its own, allowed for the app, drawn again
    enter_app(&c, 0).await;
    c.execute(
        "const s = document.querySelector('select');
         s.value = [...s.options].map((o) => o.value).find((v) => v !== s.value);
         s.dispatchEvent(new Event('change', { bubbles: true }));",
        vec![],
    )
    .await
    .unwrap();
    wait_until(
        &c,
        &format!("{DRAWN} && document.body.innerText !== {before}"),
    )
    .await;
    leave_app(&c).await;
    assert_eq!(count(&c, ".app-approval").await, 0);
    screenshot(&c, "app-cohort-heatmap.png").await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn shadertoy_runs_its_shader_on_webgl() {
    let (_fake, _home, App { c, driver: _driver }) =
        show_example(
            "shadertoy",
            "shadertoy__render-shadertoy",
            json!({"fragmentShader": "void mainImage(out vec4 fragColor, in vec2 fragCoord) {\n  vec2 uv = fragCoord / iResolution.xy;\n  fragColor = vec4(uv, 0.5 + 0.5 * sin(iTime), 1.0);\n}"}),
        )
        .await;
    show_app(&c, "show it").await;
    in_frame_until(
        &c,
        "!!document.querySelector('canvas')?.getContext('webgl2')",
    )
    .await;
    // a frame's pixels, read right after the app drew it (the next animation frame's callbacks
    // run in order: the app's first, then this one, before the frame is shown and cleared)
    enter_app(&c, 0).await;
    let lit = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             requestAnimationFrame(() => {
               const c = document.querySelector('canvas');
               const gl = c.getContext('webgl2');
               const px = new Uint8Array(4 * c.width * c.height);
               gl.readPixels(0, 0, c.width, c.height, gl.RGBA, gl.UNSIGNED_BYTE, px);
               done([px.some((v, i) => i % 4 !== 3 && v > 0), document.body.innerText.trim()]);
             });",
            vec![],
        )
        .await
        .unwrap();
    leave_app(&c).await;
    screenshot(&c, "app-shadertoy.png").await;
    // something drawn, and no error shown (a shader that does not compile says so in the page)
    assert_eq!(lit, json!([true, ""]));
    every_display_mode(&c).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver: run via `make test`"]
async fn sheet_music_draws_the_score_it_was_given() {
    let (_fake, _home, App { c, driver: _driver }) = show_example(
        "sheet-music",
        "sheet-music__play-sheet-music",
        json!({"abcNotation": "X:1\nT:A Scale\nM:4/4\nL:1/4\nK:C\nCDEF|GABc|"}),
    )
    .await;
    show_app(&c, "show it").await;
    in_frame_until(
        &c,
        "document.querySelectorAll('svg .abcjs-note').length >= 8 && document.body.innerText.includes('A Scale')",
    )
    .await;
    // the site it names for its sounds: named on its card, and closed
    assert!(text_content(&c, ".tool-card .app-box")
        .await
        .contains("This app names sites it would reach: https://paulrosen.github.io."));
    screenshot(&c, "app-sheet-music.png").await;
    every_display_mode(&c).await;
    c.close().await.unwrap();
}
