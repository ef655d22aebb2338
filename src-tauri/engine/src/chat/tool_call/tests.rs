use super::*;

fn route(server: &str, read_only: bool) -> RoutedTool {
    RoutedTool {
        server: server.into(),
        tool: "t".into(),
        read_only,
        trusted: true,
        ..Default::default()
    }
}

#[test]
fn calls_that_may_change_a_server_keep_their_order_the_rest_run_together() {
    let calc = route("calculator", true);
    let write = route("files", false);
    let read = route("files", true);
    let other = route("web", false);
    let routes = [
        Some(&calc),
        Some(&write),
        Some(&read),
        Some(&calc),
        Some(&other),
        None,
        Some(&read),
    ];
    // files has a write: its calls wait in turn; calculator is read-only: free; the lone web
    // call waits for nobody; an unknown call leads nowhere
    assert_eq!(
        in_order(routes.into_iter()),
        vec![None, None, Some(1), None, None, None, Some(2)]
    );
}
