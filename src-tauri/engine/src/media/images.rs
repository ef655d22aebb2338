//! Images: PNG, JPEG and WebP (no GIF: its decoder would bring a second copy of weezl, which lopdf
//! already links in its newer version), decoded within limits, turned upright
//! (EXIF orientation), downscaled and re-encoded: PNG for what was lossless or has
//! transparency (screenshots stay sharp), JPEG for photos. Only pixels are written again, so no
//! metadata survives. A small thumbnail for the window is made at the same time.
//!
//! `Limits` — at most 16384 a side, 64 megapixels, 512 MiB — are checked on the header before any
//! pixel is decoded. Downscaled to the setting (`imageMaxSide`, default 1024: halved by 2×2 means
//! while it stays at least that size, then a triangle filter); re-encoded as PNG (PNG or
//! transparency) or baseline JPEG 85; a 320 px thumbnail. `is_clean` (a PNG of pixel chunks only,
//! ending at IEND; a baseline JPEG with only the bare JFIF header, tables and one scan ending the
//! file) and `import_image` for imported files, kept byte for byte only when clean.

use std::io::Cursor;

use base64::Engine as _;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::error::{ImageError, LimitErrorKind};
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

use super::MediaError;
use crate::limits::IMAGE_MAX_SIDE;

/// The longest side Switchboard decodes.
pub const MAX_SIDE: u32 = 16_384;
/// The most pixels Switchboard decodes (a 48-megapixel phone photo is 8000×6000).
pub const MAX_PIXELS: u64 = 64_000_000;
/// The most memory one decoder may take.
const MAX_ALLOC: u64 = 512 * 1024 * 1024;
/// The longest side of a thumbnail (shown at half that on the page, sharp on a HiDPI screen).
pub const THUMBNAIL_SIDE: u32 = 320;
/// JPEG quality of photos as kept and sent.
const JPEG_QUALITY: u8 = 85;
const THUMBNAIL_QUALITY: u8 = 80;

/// An image as it is kept and sent: re-encoded, without metadata.
#[derive(Clone, PartialEq)]
pub struct PreparedImage {
    pub bytes: Vec<u8>,
    /// `image/png` or `image/jpeg`.
    pub mime: &'static str,
    pub width: u32,
    pub height: u32,
    /// Lowercase hex SHA-256 of `bytes`: its name in the store.
    pub sha256: String,
    pub thumbnail: Vec<u8>,
    pub thumbnail_mime: &'static str,
}

impl std::fmt::Debug for PreparedImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedImage")
            .field("mime", &self.mime)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bytes", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// The image format of `bytes`, when it is one Switchboard decodes.
pub(super) fn format_of(bytes: &[u8]) -> Option<ImageFormat> {
    image::guess_format(bytes)
        .ok()
        .filter(|f| matches!(f, ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP))
}

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_image_width = Some(MAX_SIDE);
    l.max_image_height = Some(MAX_SIDE);
    l.max_alloc = Some(MAX_ALLOC);
    l
}

fn image_error(e: ImageError) -> MediaError {
    match e {
        ImageError::Limits(l) => match l.kind() {
            LimitErrorKind::InsufficientMemory => MediaError::TooMuchMemory,
            _ => MediaError::BadImage(l.to_string()),
        },
        other => MediaError::BadImage(other.to_string()),
    }
}

/// Decodes `bytes` (a format [`format_of`] knows) within the limits: the size in the header is
/// checked before any pixel is decoded. With the turn its EXIF says makes it upright ([`upright`]:
/// applied by the caller, after any downscaling, where it costs a fraction).
fn decode(
    bytes: &[u8],
    format: ImageFormat,
) -> Result<(DynamicImage, Option<image::metadata::Orientation>), MediaError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits());
    let mut decoder = reader.into_decoder().map_err(|e| match e {
        ImageError::Limits(_) => {
            let (width, height) = header_size(bytes, format).unwrap_or((0, 0));
            if width > MAX_SIDE || height > MAX_SIDE {
                MediaError::TooManyPixels { width, height }
            } else {
                image_error(e)
            }
        }
        e => image_error(e),
    })?;
    let (width, height) = decoder.dimensions();
    if width > MAX_SIDE || height > MAX_SIDE || width as u64 * height as u64 > MAX_PIXELS {
        return Err(MediaError::TooManyPixels { width, height });
    }
    if width == 0 || height == 0 {
        return Err(MediaError::BadImage("it has no pixels".into()));
    }
    let orientation = decoder.orientation().ok();
    let img = DynamicImage::from_decoder(decoder).map_err(image_error)?;
    Ok((img, orientation))
}

/// `img` turned as its EXIF orientation says (a turn keeps the largest side, so it may come after
/// [`fit`]).
fn upright(
    mut img: DynamicImage,
    orientation: Option<image::metadata::Orientation>,
) -> DynamicImage {
    if let Some(o) = orientation {
        img.apply_orientation(o);
    }
    img
}

/// The size a header says, without the limits (to word a refusal).
fn header_size(bytes: &[u8], format: ImageFormat) -> Option<(u32, u32)> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.no_limits();
    reader.into_dimensions().ok()
}

/// `img` no bigger than `side` on its longest side.
fn fit(img: DynamicImage, side: u32) -> DynamicImage {
    if img.width().max(img.height()) <= side {
        return img;
    }
    // halved (each pixel the mean of a 2×2 block: what a finer filter would average anyway)
    // while that leaves it no smaller than the size, then a triangle filter to the size
    let mut img = img;
    while img.width().max(img.height()) / 2 >= side {
        match halved(&img) {
            Some(h) => img = h,
            // not 8-bit, or a line one pixel thin: the filter alone
            None => break,
        }
    }
    img.resize(side, side, FilterType::Triangle)
}

/// `img` at half its width and height, each pixel the mean of a 2×2 block (an odd last row or
/// column dropped); for 8-bit images (`None` for others). One pass over the bytes: far cheaper
/// than a general resampling filter on a 12-megapixel photo.
fn halved(img: &DynamicImage) -> Option<DynamicImage> {
    fn half(buf: &[u8], w: u32, h: u32, ch: usize) -> Vec<u8> {
        let (hw, hh) = ((w / 2) as usize, (h / 2) as usize);
        let row = w as usize * ch;
        let mut out = vec![0u8; hw * hh * ch];
        for y in 0..hh {
            let (a, b) = (&buf[2 * y * row..][..row], &buf[(2 * y + 1) * row..][..row]);
            let o = &mut out[y * hw * ch..][..hw * ch];
            for x in 0..hw {
                for c in 0..ch {
                    let i = 2 * x * ch + c;
                    let sum = a[i] as u16 + a[i + ch] as u16 + b[i] as u16 + b[i + ch] as u16;
                    o[x * ch + c] = ((sum + 2) / 4) as u8;
                }
            }
        }
        out
    }
    let (w, h) = (img.width(), img.height());
    if w < 2 || h < 2 {
        return None;
    }
    Some(match img {
        DynamicImage::ImageRgb8(i) => DynamicImage::ImageRgb8(image::RgbImage::from_raw(
            w / 2,
            h / 2,
            half(i.as_raw(), w, h, 3),
        )?),
        DynamicImage::ImageRgba8(i) => DynamicImage::ImageRgba8(image::RgbaImage::from_raw(
            w / 2,
            h / 2,
            half(i.as_raw(), w, h, 4),
        )?),
        DynamicImage::ImageLuma8(i) => DynamicImage::ImageLuma8(image::GrayImage::from_raw(
            w / 2,
            h / 2,
            half(i.as_raw(), w, h, 1),
        )?),
        DynamicImage::ImageLumaA8(i) => DynamicImage::ImageLumaA8(image::GrayAlphaImage::from_raw(
            w / 2,
            h / 2,
            half(i.as_raw(), w, h, 2),
        )?),
        _ => return None,
    })
}

/// `img` encoded: PNG when `lossless`, else JPEG.
fn encode(
    img: &DynamicImage,
    lossless: bool,
    quality: u8,
) -> Result<(Vec<u8>, &'static str), MediaError> {
    let mut out = Vec::new();
    if lossless {
        let encoder =
            PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive);
        let img: DynamicImage = if img.has_alpha() {
            img.to_rgba8().into()
        } else {
            img.to_rgb8().into()
        };
        img.write_with_encoder(encoder).map_err(image_error)?;
        Ok((out, "image/png"))
    } else {
        let encoder = JpegEncoder::new_with_quality(&mut out, quality);
        DynamicImage::from(img.to_rgb8())
            .write_with_encoder(encoder)
            .map_err(image_error)?;
        Ok((out, "image/jpeg"))
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// An image as it is kept and sent: decoded within limits, upright, no bigger than `max_side`,
/// re-encoded without metadata (PNG when it was PNG or has transparency, else JPEG),
/// with its thumbnail.
pub fn prepare_image(bytes: &[u8], max_side: u32) -> Result<PreparedImage, MediaError> {
    let format = format_of(bytes).ok_or_else(|| {
        MediaError::Unsupported(infer::get(bytes).map(|t| t.mime_type().to_string()))
    })?;
    let (img, orientation) = decode(bytes, format)?;
    let lossless = format == ImageFormat::Png || img.has_alpha();
    let img = upright(
        fit(img, IMAGE_MAX_SIDE.clamp(f64::from(max_side)) as u32),
        orientation,
    );
    let (bytes, mime) = encode(&img, lossless, JPEG_QUALITY)?;
    let thumb = fit(img.clone(), THUMBNAIL_SIDE);
    let (thumbnail, thumbnail_mime) = encode(&thumb, img.has_alpha(), THUMBNAIL_QUALITY)?;
    Ok(PreparedImage {
        sha256: sha256_hex(&bytes),
        bytes,
        mime,
        width: img.width(),
        height: img.height(),
        thumbnail,
        thumbnail_mime,
    })
}

/// An image from elsewhere (an imported conversation): checked like an attached one (it decodes
/// within the limits), and kept byte for byte when it is as [`prepare_image`] writes them
/// ([`is_clean`]), so an export of an import of an export stays the same; else made again (at
/// most the largest side the setting allows).
pub fn import_image(bytes: &[u8]) -> Result<PreparedImage, MediaError> {
    let Some(format) = format_of(bytes).filter(|_| is_clean(bytes)) else {
        return prepare_image(bytes, IMAGE_MAX_SIDE.max as u32);
    };
    let (img, orientation) = decode(bytes, format)?;
    let img = upright(img, orientation);
    let thumb = fit(img.clone(), THUMBNAIL_SIDE);
    let (thumbnail, thumbnail_mime) = encode(&thumb, img.has_alpha(), THUMBNAIL_QUALITY)?;
    Ok(PreparedImage {
        sha256: sha256_hex(bytes),
        bytes: bytes.to_vec(),
        mime: if format == ImageFormat::Png {
            "image/png"
        } else {
            "image/jpeg"
        },
        width: img.width(),
        height: img.height(),
        thumbnail,
        thumbnail_mime,
    })
}

/// Whether `bytes` are an image as [`prepare_image`] writes them: a PNG of only the chunks that
/// hold pixels (no text, time, EXIF or colour profile), or a JPEG without application segments
/// past JFIF's and without comments. An imported image that is not is made again.
pub fn is_clean(bytes: &[u8]) -> bool {
    match format_of(bytes) {
        Some(ImageFormat::Png) => png_is_clean(bytes),
        Some(ImageFormat::Jpeg) => jpeg_is_clean(bytes),
        _ => false,
    }
}

fn png_is_clean(bytes: &[u8]) -> bool {
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let len = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let kind = &bytes[at + 4..at + 8];
        if !matches!(kind, b"IHDR" | b"PLTE" | b"tRNS" | b"IDAT" | b"IEND") {
            return false;
        }
        if kind == b"IEND" {
            return at + 12 == bytes.len();
        }
        at = match at.checked_add(12 + len as usize) {
            Some(next) => next,
            None => return false,
        };
    }
    false
}

/// Whether a JPEG is as Switchboard's encoder writes it: a baseline JPEG (one scan) with only
/// the JFIF header (16 bytes, no thumbnail), tables and its frame before the scan, nothing but
/// entropy-coded data (0xFF stuffed, restart markers) in the scan, and its end the file's end.
fn jpeg_is_clean(bytes: &[u8]) -> bool {
    let mut at = 2;
    while at + 4 <= bytes.len() {
        if bytes[at] != 0xFF {
            return false;
        }
        let marker = bytes[at + 1];
        let len = u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]) as usize;
        match marker {
            // the JFIF header without a thumbnail
            0xE0 if len == 16 => {}
            // tables, the baseline frame, restart interval
            0xDB | 0xC4 | 0xC0 | 0xDD => {}
            0xDA => return scan_to_end(bytes, at + 2 + len),
            // anything else: other APPn (EXIF, XMP, ICC…), COM, progressive frames, …
            _ => return false,
        }
        at += 2 + len;
    }
    false
}

/// From `at` (a scan's data) to its end: only stuffed bytes and restart markers, then the end
/// of image as the file's last two bytes.
fn scan_to_end(bytes: &[u8], at: usize) -> bool {
    let mut i = at;
    while i + 1 < bytes.len() {
        if bytes[i] == 0xFF {
            match bytes[i + 1] {
                0x00 | 0xD0..=0xD7 => i += 2,
                0xD9 => return i + 2 == bytes.len(),
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    false
}

/// `bytes` of type `mime` as a `data:` URL (what the window shows; only ever built here, from
/// images this module wrote).
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

#[cfg(test)]
mod halving {
    use super::*;

    #[test]
    fn each_pixel_is_the_mean_of_its_block_and_an_odd_edge_is_dropped() {
        // 5×3 RGB: the last column and row are dropped
        let mut raw = vec![0u8; 5 * 3 * 3];
        let px = |x: usize, y: usize| (y * 5 + x) * 3;
        for (x, y, v) in [
            (0, 0, 10u8),
            (1, 0, 20),
            (0, 1, 30),
            (1, 1, 41),
            (2, 0, 255),
            (3, 1, 1),
        ] {
            raw[px(x, y)..px(x, y) + 3].copy_from_slice(&[v, v / 2, 0]);
        }
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_raw(5, 3, raw).unwrap());
        let h = halved(&img).unwrap().to_rgb8();
        assert_eq!(h.dimensions(), (2, 1));
        // (10+20+30+41)/4 = 25.25 → 25; (5+10+15+20)/4 = 12.5 → 13 (rounded)
        assert_eq!(h.get_pixel(0, 0).0, [25, 13, 0]);
        // (255+0+0+1)/4 = 64
        assert_eq!(h.get_pixel(1, 0).0[0], 64);
        // 16-bit images are left to the general filter
        let deep = DynamicImage::ImageRgb16(image::ImageBuffer::new(4, 4));
        assert!(halved(&deep).is_none());
        // a photo 12 times the size fits in two halvings and a filter, to the exact size
        let big = DynamicImage::ImageRgb8(image::RgbImage::new(4000, 3000));
        let fitted = fit(big, 320);
        assert_eq!((fitted.width(), fitted.height()), (320, 240));
    }
}
