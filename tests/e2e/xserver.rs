//! The X server the app's window is on (Xvfb in the tests): xdotool for the system's file
//! dialogs, and Xlib for what WebDriver cannot do with the app as it runs (its window read as a
//! screenshot; a close request as a window manager sends it).

use std::time::{Duration, Instant};

pub fn xdotool(args: &[&str]) -> std::process::Output {
    std::process::Command::new("xdotool")
        .args(args)
        .output()
        .expect("xdotool (installed by scripts/install-deps.sh --test)")
}

/// Waits for the system file dialog titled `title`, focuses it, and types `path` into it
/// (xdotool, through the X server the app runs on); `replace`: select the proposed name first
/// (a Save dialog). Then Enter.
pub async fn type_in_file_dialog(title: &str, path: &std::path::Path, replace: bool) {
    let t = Instant::now();
    let window = loop {
        let out = xdotool(&["search", "--name", title]);
        let found = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(String::from);
        if let Some(w) = found.filter(|w| !w.is_empty()) {
            break w;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no \"{title}\" dialog appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // let GTK finish mapping it
    tokio::time::sleep(Duration::from_millis(700)).await;
    // typed again (into the location entry, Ctrl+L) until the dialog has gone: keys typed
    // before GTK had its entry ready are lost on a busy machine
    for attempt in 0..4 {
        xdotool(&["windowfocus", "--sync", &window]);
        if !replace {
            // an Open dialog: its location entry (a Save dialog has its name field focused)
            xdotool(&["key", "ctrl+l"]);
            tokio::time::sleep(Duration::from_millis(400 * (attempt + 1))).await;
        }
        xdotool(&["key", "ctrl+a"]);
        xdotool(&["type", "--delay", "15", &path.display().to_string()]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        xdotool(&["key", "Return"]);
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            let out = xdotool(&["search", "--onlyvisible", "--name", title]);
            if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    panic!("the \"{title}\" dialog did not take {}", path.display());
}

pub async fn pick_in_file_dialog(title: &str, path: &std::path::Path) {
    type_in_file_dialog(title, path, false).await
}

pub async fn save_in_file_dialog(title: &str, path: &std::path::Path) {
    type_in_file_dialog(title, path, true).await
}

/// The app's window on the X server (the last one mapped, found by its title).
fn app_window() -> x11_dl::xlib::Window {
    let out = xdotool(&["search", "--onlyvisible", "--name", "^Switchboard$"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .expect("the app's window on the X server")
}

/// The app's window as a PNG, read from the X server (Xlib's `XGetImage` on the window the app
/// mapped, found by its title). Not WebDriver's screenshot: that waits for WebKit's next
/// compositing update, which never comes in the non-composited mode the app runs in (the page
/// painted, the command hung).
pub fn x_window_png() -> Vec<u8> {
    use x11_dl::xlib;
    let window = app_window();
    let xl = xlib::Xlib::open().expect("libX11");
    // SAFETY: plain Xlib calls on a display opened here and closed at the end; the image is read
    // within its bounds (XGetPixel) and destroyed once.
    unsafe {
        // an X error (the window went away, or is not all on screen) fails this screenshot with a
        // message instead of Xlib's default handler ending the whole test binary
        unsafe extern "C" fn ignore(
            _: *mut xlib::Display,
            _: *mut xlib::XErrorEvent,
        ) -> std::os::raw::c_int {
            0
        }
        (xl.XSetErrorHandler)(Some(ignore));
        let display = (xl.XOpenDisplay)(std::ptr::null());
        assert!(!display.is_null(), "no X display (DISPLAY)");
        let mut attrs: xlib::XWindowAttributes = std::mem::zeroed();
        assert!(
            (xl.XGetWindowAttributes)(display, window, &mut attrs) != 0,
            "the app's window {window} is gone"
        );
        let (width, height) = (attrs.width.max(1) as u32, attrs.height.max(1) as u32);
        let image = (xl.XGetImage)(display, window, 0, 0, width, height, !0, xlib::ZPixmap);
        assert!(!image.is_null(), "XGetImage of window {window}");
        let im = &*image;
        let channel = |pixel: u64, mask: u64| -> u8 {
            if mask == 0 {
                return 0;
            }
            let v = (pixel & mask) >> mask.trailing_zeros();
            let max = mask >> mask.trailing_zeros();
            (v * 255 / max) as u8
        };
        let mut rgb = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height as i32 {
            for x in 0..width as i32 {
                let p = (xl.XGetPixel)(image, x, y) as u64;
                rgb.push(channel(p, im.red_mask as u64));
                rgb.push(channel(p, im.green_mask as u64));
                rgb.push(channel(p, im.blue_mask as u64));
            }
        }
        (xl.XDestroyImage)(image);
        (xl.XCloseDisplay)(display);
        let mut png = Vec::new();
        let mut encoder = png::Encoder::new(&mut png, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(&rgb).unwrap();
        writer.finish().unwrap();
        png
    }
}

/// Asks the app's window to close as a window manager does when a person clicks its close button
/// (a `WM_DELETE_WINDOW` client message; WebDriver's own close skips the app's close request).
pub fn x_close_window() {
    use x11_dl::xlib;
    let window = app_window();
    let xl = xlib::Xlib::open().expect("libX11");
    // SAFETY: plain Xlib calls on a display opened and closed here; the event is fully set.
    unsafe {
        let display = (xl.XOpenDisplay)(std::ptr::null());
        assert!(!display.is_null(), "no X display (DISPLAY)");
        let atom = |name: &str| {
            let name = std::ffi::CString::new(name).unwrap();
            (xl.XInternAtom)(display, name.as_ptr(), 0)
        };
        let mut event: xlib::XEvent = std::mem::zeroed();
        event.client_message.type_ = xlib::ClientMessage;
        event.client_message.window = window;
        event.client_message.message_type = atom("WM_PROTOCOLS");
        event.client_message.format = 32;
        event
            .client_message
            .data
            .set_long(0, atom("WM_DELETE_WINDOW") as std::os::raw::c_long);
        event
            .client_message
            .data
            .set_long(1, xlib::CurrentTime as std::os::raw::c_long);
        (xl.XSendEvent)(display, window, 0, xlib::NoEventMask, &mut event);
        (xl.XFlush)(display);
        (xl.XCloseDisplay)(display);
    }
}

/// The app's window on the X server: its place and size (`xdotool getwindowgeometry`).
pub fn x_window_geometry() -> (i32, i32, u32, u32) {
    let w = app_window().to_string();
    let out = xdotool(&["getwindowgeometry", "--shell", &w]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let field = |name: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    (
        field("X") as i32,
        field("Y") as i32,
        field("WIDTH") as u32,
        field("HEIGHT") as u32,
    )
}

/// Moves and resizes the app's window as a window manager would (there is none under Xvfb).
pub fn x_move_resize(x: i32, y: i32, width: u32, height: u32) {
    let w = app_window().to_string();
    xdotool(&["windowsize", &w, &width.to_string(), &height.to_string()]);
    xdotool(&["windowmove", &w, &x.to_string(), &y.to_string()]);
}

/// Gives the keyboard focus to the app's window (`true`), or takes it away to no window at all,
/// as when the user works in another program.
pub fn x_focus_app(on: bool) {
    use x11_dl::xlib;
    let window = if on { app_window() } else { 0 };
    let xl = xlib::Xlib::open().expect("libX11");
    // SAFETY: plain Xlib calls on a display opened and closed here.
    unsafe {
        let display = (xl.XOpenDisplay)(std::ptr::null());
        assert!(!display.is_null(), "no X display (DISPLAY)");
        // window 0 is X's None: the keyboard goes nowhere, every window loses the focus
        (xl.XSetInputFocus)(display, window, xlib::RevertToNone, xlib::CurrentTime);
        (xl.XFlush)(display);
        (xl.XCloseDisplay)(display);
    }
}
