//! Sample files for the attachment tests, made in code (nothing binary is committed): a photo
//! whose EXIF names a camera, a GPS position and an orientation; a screenshot-like PNG with a
//! text chunk; decompression bombs; PDFs with text, without (scanned), and broken.
#![allow(dead_code)]

use std::io::Cursor;

/// The camera maker written into [`photo_jpeg`]'s EXIF: found nowhere once it is prepared.
pub const CAMERA: &str = "SwitchboardCam";
/// The text chunk written into [`screenshot_png`]: found nowhere once it is prepared.
pub const PNG_COMMENT: &str = "secret-location-51.5N";

/// A photo-like JPEG, `width`×`height` (smooth colours, a little grain), quality 90, with an
/// EXIF segment: maker [`CAMERA`], orientation 6 (turn 90° clockwise to view), a GPS latitude.
pub fn photo_jpeg(width: u32, height: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let grain = (seed >> 28) as u8;
        image::Rgb([
            ((x * 255 / width.max(1)) as u8).saturating_add(grain),
            ((y * 255 / height.max(1)) as u8).saturating_add(grain),
            (((x + y) * 127 / (width + height).max(1)) as u8).saturating_add(grain),
        ])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&img)
        .unwrap();
    with_exif(&jpeg, 6)
}

/// `jpeg` with an EXIF APP1 segment (maker, `orientation`, GPS) after its JFIF segment.
pub fn with_exif(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff: Vec<u8> = Vec::new();
    let u16le = |v: u16| v.to_le_bytes();
    let u32le = |v: u32| v.to_le_bytes();
    // header, then IFD0 at 8: Make, Orientation, GPS pointer
    tiff.extend(b"II");
    tiff.extend(u16le(42));
    tiff.extend(u32le(8));
    let make = format!("{CAMERA}\0");
    let make_at = 8 + 2 + 3 * 12 + 4;
    let gps_at = (make_at + make.len() as u32 + 1) & !1;
    tiff.extend(u16le(3));
    tiff.extend(u16le(0x010F));
    tiff.extend(u16le(2));
    tiff.extend(u32le(make.len() as u32));
    tiff.extend(u32le(make_at));
    tiff.extend(u16le(0x0112));
    tiff.extend(u16le(3));
    tiff.extend(u32le(1));
    tiff.extend(u16le(orientation));
    tiff.extend(u16le(0));
    tiff.extend(u16le(0x8825));
    tiff.extend(u16le(4));
    tiff.extend(u32le(1));
    tiff.extend(u32le(gps_at));
    tiff.extend(u32le(0));
    tiff.extend(make.as_bytes());
    while (tiff.len() as u32) < gps_at {
        tiff.push(0);
    }
    // the GPS IFD: latitude N 48° 51' 29"
    let rationals_at = gps_at + 2 + 2 * 12 + 4;
    tiff.extend(u16le(2));
    tiff.extend(u16le(0x0001));
    tiff.extend(u16le(2));
    tiff.extend(u32le(2));
    tiff.extend(b"N\0\0\0");
    tiff.extend(u16le(0x0002));
    tiff.extend(u16le(5));
    tiff.extend(u32le(3));
    tiff.extend(u32le(rationals_at));
    tiff.extend(u32le(0));
    for (n, d) in [(48u32, 1u32), (51, 1), (29, 1)] {
        tiff.extend(u32le(n));
        tiff.extend(u32le(d));
    }
    let mut app1 = vec![0xFF, 0xE1];
    app1.extend(((tiff.len() + 8) as u16).to_be_bytes());
    app1.extend(b"Exif\0\0");
    app1.extend(&tiff);
    // after SOI and the JFIF APP0 segment
    let app0_len = u16::from_be_bytes([jpeg[4], jpeg[5]]) as usize;
    let at = 4 + app0_len;
    let mut out = jpeg[..at].to_vec();
    out.extend(app1);
    out.extend(&jpeg[at..]);
    out
}

/// A screenshot-like PNG (flat areas, a few lines of "text"), with a `tEXt` chunk holding
/// [`PNG_COMMENT`].
pub fn screenshot_png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(width, height, |x, y| {
        let line = (y / 12) % 3 == 0 && (x / 3) % 4 != 0;
        if line {
            image::Rgba([20, 20, 30, 255])
        } else {
            image::Rgba([240, 242, 245, 255])
        }
    });
    let mut png = Vec::new();
    img.write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let mut data = b"Comment\0".to_vec();
    data.extend(PNG_COMMENT.as_bytes());
    insert_chunk(&png, b"tEXt", &data)
}

/// `png` with a chunk added right after IHDR.
pub fn insert_chunk(png: &[u8], kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let ihdr_end = 8 + 12 + 13;
    let mut out = png[..ihdr_end].to_vec();
    out.extend(chunk(kind, data));
    out.extend(&png[ihdr_end..]);
    out
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let mut crc_input = kind.to_vec();
    crc_input.extend(data);
    out.extend(&crc_input);
    out.extend(crc32(&crc_input).to_be_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A PNG whose header says it is `side`×`side` pixels (8-bit grey), with a few bytes of
/// compressed data: a decoder that believed the header would allocate side² bytes.
pub fn bomb_png(side: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend(side.to_be_bytes());
    ihdr.extend([8, 0, 0, 0, 0]);
    out.extend(chunk(b"IHDR", &ihdr));
    // zlib: a stored empty block
    out.extend(chunk(
        b"IDAT",
        &[0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 1],
    ));
    out.extend(chunk(b"IEND", &[]));
    out
}

/// A PDF with one page per entry of `pages`, each line of a page shown as text in Helvetica.
/// An empty page has no text (as a scanned page has none).
pub fn pdf(pages: &[&[&str]]) -> Vec<u8> {
    let n = pages.len();
    // objects: 1 catalog, 2 pages, 3 font, then per page: page, contents
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {n} >>",
            (0..n)
                .map(|i| format!("{} 0 R", 4 + 2 * i))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    ];
    for (i, lines) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
            5 + 2 * i
        ));
        let mut content = String::new();
        if !lines.is_empty() {
            content.push_str("BT /F1 12 Tf 72 720 Td 14 TL\n");
            for line in lines.iter() {
                let escaped = line
                    .replace('\\', "\\\\")
                    .replace('(', "\\(")
                    .replace(')', "\\)");
                content.push_str(&format!("({escaped}) Tj T*\n"));
            }
            content.push_str("ET\n");
        }
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}endstream",
            content.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A file that starts like a PDF and is not one past its first line.
pub fn corrupt_pdf() -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    out.extend(
        b"1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\n\x00\x01\x02 garbage stream ( <<< \n",
    );
    out.extend(std::iter::repeat_n(0xAB, 300));
    out
}
