use super::*;

#[path = "../../tests/it/support/samples.rs"]
mod samples;

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_photo_is_turned_upright_downscaled_and_loses_its_metadata() {
    // 1200×800 as stored, orientation 6: 800×1200 as seen
    let photo = samples::photo_jpeg(1200, 800);
    assert!(contains(&photo, samples::CAMERA.as_bytes()));
    assert!(!is_clean(&photo), "EXIF makes it unclean");
    let Prepared::Image(img) = prepare(&photo, 600).unwrap() else {
        panic!("an image")
    };
    assert_eq!(img.mime, "image/jpeg");
    assert_eq!((img.width, img.height), (400, 600), "upright, then fitted");
    assert!(!contains(&img.bytes, samples::CAMERA.as_bytes()));
    assert!(!contains(&img.bytes, b"Exif"));
    assert!(is_clean(&img.bytes));
    // what is kept byte for byte on import is exactly that: nothing after its end, no comment,
    // no second header
    let mut tail = img.bytes.clone();
    tail.extend_from_slice(b"hidden payload");
    assert!(!is_clean(&tail), "bytes after the end of image");
    let mut comment = img.bytes[..2].to_vec();
    comment.extend_from_slice(&[0xFF, 0xFE, 0x00, 0x07, b's', b'e', b'c', b'r', b'e']);
    comment.extend_from_slice(&img.bytes[2..]);
    assert!(!is_clean(&comment), "a COM segment");
    let again = image::load_from_memory(&img.bytes).unwrap();
    assert_eq!((again.width(), again.height()), (400, 600));
    // the name in the store is the hash of what is kept
    assert_eq!(img.sha256.len(), 64);
    let thumb = image::load_from_memory(&img.thumbnail).unwrap();
    assert_eq!(thumb.height(), THUMBNAIL_SIDE);
    // a small image is not made bigger
    let Prepared::Image(small) = prepare(&samples::photo_jpeg(300, 200), 1024).unwrap() else {
        panic!()
    };
    assert_eq!((small.width, small.height), (200, 300));
}

#[test]
fn a_screenshot_stays_lossless_and_loses_its_text_chunk() {
    let png = samples::screenshot_png(500, 300);
    assert!(contains(&png, samples::PNG_COMMENT.as_bytes()));
    assert!(!is_clean(&png));
    let img = prepare_image(&png, 1024).unwrap();
    assert_eq!(img.mime, "image/png");
    assert_eq!((img.width, img.height), (500, 300));
    assert!(!contains(&img.bytes, samples::PNG_COMMENT.as_bytes()));
    assert!(is_clean(&img.bytes));
    // the same pixels decoded back (lossless)
    let before = image::load_from_memory(&png).unwrap().to_rgb8();
    let after = image::load_from_memory(&img.bytes).unwrap().to_rgb8();
    assert_eq!(before, after);
    // preparing what was prepared gives the same bytes (an import of an export stays the same)
    assert_eq!(prepare_image(&img.bytes, 1024).unwrap().bytes, img.bytes);
}

#[test]
fn bombs_are_refused_before_any_pixel_is_decoded() {
    for side in [100_000, 20_000] {
        let err = prepare(&samples::bomb_png(side), 1024).unwrap_err();
        assert_eq!(
            err,
            MediaError::TooManyPixels {
                width: side,
                height: side
            },
            "{side}"
        );
        assert!(err.to_string().contains(&format!("{side}×{side}")), "{err}");
    }
    // within the side limit, over the pixel count
    let err = prepare(&samples::bomb_png(9000), 1024).unwrap_err();
    assert!(matches!(err, MediaError::TooManyPixels { .. }), "{err:?}");
}

#[test]
fn broken_and_foreign_files_are_refused_with_words() {
    let mut cut = samples::screenshot_png(200, 200);
    cut.truncate(cut.len() / 2);
    assert!(matches!(prepare(&cut, 1024), Err(MediaError::BadImage(_))));
    let mut jpeg = samples::photo_jpeg(64, 64);
    let n = jpeg.len();
    jpeg[n / 2..].fill(0);
    // a JPEG whose data is zeros still decodes (grey); one cut at its header does not
    assert!(prepare(&jpeg[..40], 1024).is_err());
    assert_eq!(prepare(b"", 1024), Err(MediaError::Empty));
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00rest of a zip file\x00\x00";
    let err = prepare(zip, 1024).unwrap_err();
    assert_eq!(err, MediaError::Unsupported(Some("application/zip".into())));
    assert!(err.to_string().contains("application/zip"));
    // GIF is not read (see images.rs): refused by its type, not taken for text
    let gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    let err = prepare(gif, 1024).unwrap_err();
    assert_eq!(err, MediaError::Unsupported(Some("image/gif".into())));
    assert!(err.to_string().contains("PNG, JPEG and WebP"), "{err}");
    let big = vec![b'a'; MAX_FILE_BYTES + 1];
    assert!(matches!(
        prepare(&big, 1024),
        Err(MediaError::TooBig { .. })
    ));
    // an SVG is text, never an image
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    assert_eq!(sniff(svg), Kind::Text);
    assert!(matches!(prepare(svg, 1024), Ok(Prepared::Document(d)) if d.mime == "text/plain"));
}

#[test]
fn the_type_comes_from_the_bytes() {
    assert_eq!(sniff(&samples::screenshot_png(8, 8)), Kind::Image);
    assert_eq!(sniff(&samples::pdf(&[&["x"]])), Kind::Pdf);
    assert_eq!(sniff("fn main() {}\n".as_bytes()), Kind::Text);
    assert_eq!(sniff(&[0u8, 1, 2, 3, 0, 0]), Kind::Other);
}

#[test]
fn text_files_are_read_in_their_encoding_and_cut_when_long() {
    let doc = |bytes: &[u8]| match prepare(bytes, 1024).unwrap() {
        Prepared::Document(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(doc(b"\xEF\xBB\xBFcaf\xC3\xA9").text, "café");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("naïve".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(doc(&utf16).text, "naïve");
    // a stray Latin-1 byte in a log
    let mut latin = "x".repeat(200).into_bytes();
    latin.push(0xE9);
    assert!(doc(&latin).text.ends_with('\u{FFFD}'));
    let long = "é".repeat(MAX_DOCUMENT_CHARS + 5);
    let d = doc(long.as_bytes());
    assert!(d.cut);
    assert_eq!(d.text.chars().count(), MAX_DOCUMENT_CHARS);
}

#[test]
fn a_pdf_gives_its_text_page_by_page() {
    let pdf = samples::pdf(&[
        &["Quarterly report", "Otters: 42"],
        &["Second page (final)"],
    ]);
    let Prepared::Document(d) = prepare(&pdf, 1024).unwrap() else {
        panic!()
    };
    assert_eq!(d.mime, "application/pdf");
    assert_eq!(d.pages, Some(2));
    assert!(d.text.contains("Quarterly report"), "{:?}", d.text);
    assert!(d.text.contains("Otters: 42"), "{:?}", d.text);
    assert!(d.text.contains("Second page (final)"), "{:?}", d.text);
    assert!(d.text.find("Otters").unwrap() < d.text.find("Second").unwrap());
    assert!(!d.cut);
}

#[test]
fn a_scanned_or_broken_pdf_is_refused_with_words() {
    let scanned = samples::pdf(&[&[], &[]]);
    let err = prepare(&scanned, 1024).unwrap_err();
    assert_eq!(err, MediaError::NoText { pages: 2 });
    assert!(err.to_string().contains("scanned"), "{err}");
    let err = prepare(&samples::corrupt_pdf(), 1024).unwrap_err();
    assert!(matches!(err, MediaError::BadPdf(_)), "{err:?}");
    let mut cut = samples::pdf(&[&["hello"]]);
    cut.truncate(30);
    assert!(prepare(&cut, 1024).is_err());
}

#[test]
fn a_panicking_decoder_is_an_error() {
    let r: Result<(), MediaError> = guarded(|| panic!("boom"));
    assert_eq!(r, Err(MediaError::Crashed));
    assert_eq!(guarded(|| Ok(3)), Ok(3));
}

#[test]
fn data_urls_carry_the_type_and_base64() {
    assert_eq!(
        data_url("image/png", b"\x89PNG"),
        "data:image/png;base64,iVBORw=="
    );
}

#[test]
fn images_the_halving_cannot_take_are_still_fitted() {
    // 16-bit, and a line one pixel thin: fitted by the filter alone (this looped forever once)
    let mut png16 = Vec::new();
    image::DynamicImage::ImageRgb16(image::ImageBuffer::new(3000, 2000))
        .write_to(
            &mut std::io::Cursor::new(&mut png16),
            image::ImageFormat::Png,
        )
        .unwrap();
    let img = prepare_image(&png16, 1024).unwrap();
    assert_eq!((img.width, img.height), (1024, 683));
    let mut line = Vec::new();
    image::DynamicImage::ImageLuma8(image::GrayImage::new(1, 5000))
        .write_to(
            &mut std::io::Cursor::new(&mut line),
            image::ImageFormat::Png,
        )
        .unwrap();
    let img = prepare_image(&line, 1024).unwrap();
    assert_eq!(img.height, 1024);
}
