//! The window's size and place: kept as it moves or is resized, put back at start (clamped
//! onto a screen that still exists).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tauri::{PhysicalPosition, PhysicalSize, Runtime, WebviewWindow};

use super::{json, WindowState};

/// The window's size and place on the desktop, in physical pixels (those of its screen).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    #[serde(default)]
    pub maximized: bool,
}

/// A screen's area, in physical pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Screen {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

/// Where a window kept as `saved` goes on these screens: as it was when at least a corner of
/// 64×48 px of its title area is on one of them (so it can be grabbed and moved); else centred on
/// the first screen. Its size never exceeds the screen it lands on, nor falls under `min`.
pub fn clamp(saved: Geometry, screens: &[Screen], min: (u32, u32)) -> Option<Geometry> {
    let first = *screens.first()?;
    let grab = |s: &Screen| {
        let (gx0, gy0) = (saved.x.max(s.x), saved.y.max(s.y));
        let gx1 = (saved.x + saved.width as i32).min(s.x + s.width as i32);
        let gy1 = (saved.y + 48).min(s.y + s.height as i32);
        gx1 - gx0 >= 64 && gy1 - gy0 >= 24
    };
    let on = screens.iter().copied().find(grab);
    let screen = on.unwrap_or(first);
    let width = saved.width.clamp(min.0.min(screen.width), screen.width);
    let height = saved.height.clamp(min.1.min(screen.height), screen.height);
    let (x, y) = match on {
        Some(_) => (saved.x, saved.y),
        None => (
            screen.x + (screen.width - width) as i32 / 2,
            screen.y + (screen.height - height) as i32 / 2,
        ),
    };
    Some(Geometry {
        x,
        y,
        width,
        height,
        maximized: saved.maximized,
    })
}

/// The window's smallest size in logical pixels (`tauri.conf.json`: minWidth, minHeight).
pub const MIN_SIZE: (u32, u32) = (640, 420);

impl WindowState {
    /// Puts the window where it was (clamped onto a screen that still exists), before it shows.
    pub fn restore<R: Runtime>(&self, window: &WebviewWindow<R>) {
        let Some(saved) = self
            .store
            .get("window")
            .and_then(|v| serde_json::from_value::<Geometry>(v).ok())
        else {
            return;
        };
        let screens: Vec<Screen> = window
            .available_monitors()
            .unwrap_or_default()
            .iter()
            .map(|m| Screen {
                x: m.position().x,
                y: m.position().y,
                width: m.size().width,
                height: m.size().height,
            })
            .collect();
        let scale = window.scale_factor().unwrap_or(1.0);
        let min = (
            (MIN_SIZE.0 as f64 * scale) as u32,
            (MIN_SIZE.1 as f64 * scale) as u32,
        );
        let Some(g) = clamp(saved, &screens, min) else {
            return;
        };
        let _ = window.set_size(PhysicalSize::new(g.width, g.height));
        let _ = window.set_position(PhysicalPosition::new(g.x, g.y));
        if g.maximized {
            let _ = window.maximize();
        }
    }

    /// The window moved or was resized: keeps its geometry (a maximized window keeps the size
    /// and place it has when not maximized), written once it has been still for a moment.
    pub fn window_changed<R: Runtime>(self: &Arc<Self>, window: &WebviewWindow<R>) {
        if window.is_minimized().unwrap_or(false) {
            return;
        }
        let maximized = window.is_maximized().unwrap_or(false);
        let mut g = self
            .store
            .get("window")
            .and_then(|v| serde_json::from_value::<Geometry>(v).ok());
        if !maximized {
            let (Ok(pos), Ok(size)) = (window.outer_position(), window.inner_size()) else {
                return;
            };
            g = Some(Geometry {
                x: pos.x,
                y: pos.y,
                width: size.width,
                height: size.height,
                maximized: false,
            });
        }
        let Some(mut g) = g else { return };
        g.maximized = maximized;
        self.store.set("window", json(&g));
        let mut pending = self.geometry_pending.lock().unwrap();
        if !*pending {
            *pending = true;
            let me = Arc::clone(self);
            tauri::async_runtime::spawn(async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                *me.geometry_pending.lock().unwrap() = false;
                if let Err(e) = me.save() {
                    tracing::warn!("window state: {e}");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Screen = Screen {
        x: 0,
        y: 0,
        width: 1920,
        height: 1080,
    };

    fn g(x: i32, y: i32, width: u32, height: u32) -> Geometry {
        Geometry {
            x,
            y,
            width,
            height,
            maximized: false,
        }
    }

    #[test]
    fn a_window_on_a_screen_stays_where_it_was() {
        assert_eq!(
            clamp(g(100, 50, 900, 700), &[SCREEN], (640, 420)),
            Some(g(100, 50, 900, 700))
        );
    }

    #[test]
    fn a_window_on_a_screen_that_is_gone_is_centred_on_one_that_is() {
        // it was on a second screen to the right, now unplugged
        let second = Screen { x: 1920, ..SCREEN };
        let saved = g(2100, 100, 1000, 700);
        assert_eq!(
            clamp(saved, &[SCREEN, second], (640, 420)),
            Some(saved),
            "on the second screen while it is there"
        );
        assert_eq!(
            clamp(saved, &[SCREEN], (640, 420)),
            Some(g(460, 190, 1000, 700))
        );
    }

    #[test]
    fn a_window_whose_title_is_off_screen_comes_back() {
        // only its bottom edge shows: its title bar cannot be grabbed
        assert_eq!(
            clamp(g(100, -650, 900, 700), &[SCREEN], (640, 420)),
            Some(g(510, 190, 900, 700))
        );
    }

    #[test]
    fn a_window_larger_than_its_screen_is_made_to_fit() {
        let small = Screen {
            width: 1280,
            height: 720,
            ..SCREEN
        };
        let mut saved = g(0, 0, 2500, 1400);
        saved.maximized = true;
        let got = clamp(saved, &[small], (640, 420)).unwrap();
        assert_eq!((got.width, got.height, got.maximized), (1280, 720, true));
        assert_eq!(
            clamp(g(0, 0, 100, 100), &[small], (640, 420))
                .unwrap()
                .width,
            640
        );
        assert_eq!(clamp(saved, &[], (640, 420)), None);
    }
}
