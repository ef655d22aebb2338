//! Importing an exported conversation (any bytes as the JSON file): refused with an error, or
//! imported as something that exports to a document which imports and exports to itself.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use switchboard_engine::chat::view::conversation_view;
use switchboard_engine::store::exchange::{markdown, ExportedConversation};
use switchboard_engine::store::Store;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});
static STORE: LazyLock<Store> = LazyLock::new(|| RT.block_on(Store::open_in_memory()).unwrap());

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<ExportedConversation>(data) else {
        return;
    };
    // (opened outside the runtime's block_on, which it needs itself)
    let s = &*STORE;
    RT.block_on(async {
        let Ok(id) = s.import_json(&doc, None).await else {
            return;
        };
        let first = s.export_json(id).await.unwrap();
        assert_eq!(first.messages.len(), doc.messages.len());
        let again = s.import_json(&first, None).await.unwrap();
        assert_eq!(s.export_json(again).await.unwrap(), first);
        let conv = s.conversation(id).await.unwrap();
        let _ = markdown(&conv);
        let _ = conversation_view(&conv);
    });
});
