#!/usr/bin/env bash
# Builds Switchboard's AppImage from the .deb that `tauri bundle` made in PROFILE_DIR (target/release,
# or target/debug for the package checks of `make test`):
#   scripts/appimage.sh target/release   ->  target/release/bundle/appimage/Switchboard_<version>_x86_64.AppImage
#
# Why not Tauri's own AppImage bundler: it downloads linuxdeploy and its GTK plugin from GitHub at
# build time, which neither this project's machines nor its CI can reach. This builds the same kind
# of file by the AppImage spec (type 2): the official AppImage runtime (an ELF that mounts or
# extracts what follows it) and a SquashFS image of the AppDir appended to it.
#   - The runtime is AppImageKit's runtime-x86_64 as the crates.io crate `appimage` 0.4.0 ships it
#     (assets/runtime-x86_64), fetched from crates.io's static host and checked against the crate's
#     checksum in the crates.io index. It mounts with FUSE 2 (libfuse.so.2) when it can, and
#     otherwise `--appimage-extract` or APPIMAGE_EXTRACT_AND_RUN=1 run it without FUSE.
#   - The SquashFS image is made by mksquashfs (squashfs-tools, installed by install-deps).
#   - The AppDir holds what the .deb installs (the app, the built-in servers' binary, the desktop
#     entry, icons, the .mcpb MIME type), and uses the system's WebKitGTK 4.1 and GTK 3, as the .deb
#     and .rpm do: AppRun says which package to install when they are missing.
set -euo pipefail
profile_dir="$(readlink -f "${1:?usage: scripts/appimage.sh target/release|target/debug}")"
cd "$(dirname "$0")/.."
arch="$(uname -m)"
if [ "$arch" != x86_64 ]; then
  echo "appimage: only x86_64 is built (the runtime used is AppImageKit's runtime-x86_64); this is $arch" >&2
  exit 1
fi
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' tauri.conf.json)"
deb="$profile_dir/bundle/deb/Switchboard_${version}_amd64.deb"
if [ ! -f "$deb" ]; then
  echo "appimage: no $deb; run tauri bundle (make bundle does) first" >&2
  exit 1
fi
command -v mksquashfs >/dev/null || { echo "appimage: mksquashfs is missing (scripts/install-deps.sh installs squashfs-tools)" >&2; exit 1; }

# The runtime, once per machine (target/tools survives `make` runs; a bad download is never used).
crate_sha256=567a4da6b94a2ac20a27620933c80fc14cf475b5fe7d7b137d20eb237d6b1920
tools=target/tools
runtime="$tools/appimage-runtime-x86_64"
if [ ! -s "$runtime" ]; then
  mkdir -p "$tools"
  echo "appimage: fetching the AppImage runtime (crate appimage 0.4.0 from crates.io)"
  curl -fsSL --retry 3 -o "$tools/appimage-0.4.0.crate.part" https://static.crates.io/crates/appimage/appimage-0.4.0.crate
  echo "$crate_sha256  $tools/appimage-0.4.0.crate.part" | sha256sum -c --quiet - \
    || { echo "appimage: the downloaded crate's checksum is wrong; not used" >&2; rm -f "$tools/appimage-0.4.0.crate.part"; exit 1; }
  tar -xzf "$tools/appimage-0.4.0.crate.part" -O appimage-0.4.0/assets/runtime-x86_64 > "$runtime.part"
  rm -f "$tools/appimage-0.4.0.crate.part"
  mv "$runtime.part" "$runtime"
fi

out_dir="$profile_dir/bundle/appimage"
appdir="$out_dir/Switchboard.AppDir"
image="$out_dir/Switchboard_${version}_x86_64.AppImage"
rm -rf "$appdir" "$image"
mkdir -p "$appdir"
dpkg-deb -x "$deb" "$appdir"

# The AppDir's own entry, icon and entry point (the AppImage spec's top level).
desktop="$(ls "$appdir"/usr/share/applications/*.desktop | head -1)"
cp "$desktop" "$appdir/switchboard.desktop"
cp "$appdir/usr/share/icons/hicolor/128x128/apps/switchboard.png" "$appdir/switchboard.png"
ln -s switchboard.png "$appdir/.DirIcon"
cat > "$appdir/AppRun" <<'APPRUN'
#!/bin/sh
# Switchboard's AppImage entry point: the app in this AppDir, on the system's WebKitGTK 4.1 and GTK 3.
HERE="$(dirname "$(readlink -f "$0")")"
# the libraries the loader would not find (as it would look: LD_LIBRARY_PATH included)
missing=""
if command -v ldd >/dev/null 2>&1; then
  missing="$(ldd "$HERE/usr/bin/switchboard" 2>/dev/null | sed -n 's/^[[:space:]]*\([^[:space:]]*\) => not found.*/\1/p' | tr '\n' ' ')"
fi
if [ -n "$missing" ]; then
  echo "Switchboard needs libraries this system lacks: $missing" >&2
  echo "They come with WebKitGTK 4.1 and GTK 3. Install them: sudo apt install libwebkit2gtk-4.1-0 (Debian, Ubuntu)," >&2
  echo "sudo dnf install webkit2gtk4.1 (Fedora)," >&2
  echo "sudo pacman -S webkit2gtk-4.1 (Arch), sudo zypper install libwebkit2gtk-4_1-0 (openSUSE)." >&2
  exit 127
fi
export XDG_DATA_DIRS="$HERE/usr/share:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
exec "$HERE/usr/bin/switchboard" "$@"
APPRUN
chmod 755 "$appdir/AppRun"

mksquashfs "$appdir" "$out_dir/image.squashfs" -root-owned -noappend -no-progress -comp xz -quiet >/dev/null
cat "$runtime" "$out_dir/image.squashfs" > "$image"
rm -f "$out_dir/image.squashfs"
chmod 755 "$image"
echo "appimage: $image ($(du -h "$image" | cut -f1))"
