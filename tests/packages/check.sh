#!/usr/bin/env bash
# The packages' checks that need no root (make test runs them on the debug build's packages; after
# `make bundle`, run `tests/packages/check.sh target/release` for the shipped ones):
#   - the .deb and the .rpm hold the app, the built-in servers' binary, the desktop entry (the
#     handler of .mcpb files), the icons and the .mcpb MIME type, and declare WebKitGTK 4.1 and GTK 3;
#   - the AppImage extracts, its AppRun runs `--version` (and so does the image itself, extracting
#     on the fly, for machines without FUSE), the built-in servers answer from inside it, and AppRun
#     names the packages to install when WebKitGTK is missing instead of failing in the loader.
set -euo pipefail
profile_dir="${1:?usage: tests/packages/check.sh target/debug|target/release}"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$(dirname "$0")/../../tauri.conf.json")"
fails=0
fail() { echo "packages: FAIL: $*" >&2; fails=$((fails + 1)); }
for tool in dpkg-deb rpm rpm2archive; do
  command -v "$tool" >/dev/null || { echo "packages: $tool is missing (scripts/install-deps.sh --test installs it)" >&2; exit 1; }
done
# this version's packages (an older version's may still lie beside them)
deb="$profile_dir/bundle/deb/Switchboard_${version}_amd64.deb"
rpm="$profile_dir/bundle/rpm/Switchboard-${version}-1.x86_64.rpm"
image="$profile_dir/bundle/appimage/Switchboard_${version}_x86_64.AppImage"
for p in "$deb" "$rpm" "$image"; do
  [ -f "$p" ] || { echo "packages: $p is missing (make test-packages or make bundle builds it)" >&2; exit 1; }
done
has_line() { grep -qxF -- "$2" <<<"$1" || fail "$3 lacks $2"; }

files=(/usr/bin/switchboard /usr/bin/switchboard-mcp /usr/share/applications/Switchboard.desktop
       /usr/share/icons/hicolor/32x32/apps/switchboard.png /usr/share/icons/hicolor/128x128/apps/switchboard.png
       /usr/share/mime/packages/switchboard-mcpb.xml)

listing="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||; s|^|/|')" || fail "dpkg-deb cannot list the .deb"
for f in "${files[@]}"; do has_line "$listing" "$f" "the .deb"; done
depends="$(dpkg-deb -f "$deb" Depends)" || fail "the .deb has no Depends"
for d in libwebkit2gtk-4.1-0 libgtk-3-0; do grep -qw -- "$d" <<<"$depends" || fail "the .deb does not depend on $d ($depends)"; done
entry="$(dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards '*usr/share/applications/Switchboard.desktop')" \
  || fail "the .deb's desktop entry does not extract"
has_line "$entry" "MimeType=application/x-mcpb;" "the .deb's desktop entry"
has_line "$entry" "Exec=switchboard %F" "the .deb's desktop entry"

listing="$(rpm -qpl "$rpm" 2>&1)" || fail "rpm cannot list the .rpm: $listing"
for f in "${files[@]}"; do has_line "$listing" "$f" "the .rpm"; done
requires="$(rpm -qpR "$rpm" 2>&1)" || fail "rpm cannot read the .rpm's requirements: $requires"
for d in "libwebkit2gtk-4.1.so.0()(64bit)" "libgtk-3.so.0()(64bit)"; do has_line "$requires" "$d" "the .rpm's requirements"; done
entry="$(rpm2archive - <"$rpm" | tar -xzO --wildcards '*usr/share/applications/Switchboard.desktop')" || fail "the .rpm's desktop entry does not extract"
has_line "$entry" "MimeType=application/x-mcpb;" "the .rpm's desktop entry"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
abs_image="$(readlink -f "$image")"
(cd "$work" && "$abs_image" --appimage-extract >/dev/null) || fail "the AppImage does not extract"
root="$work/squashfs-root"
for f in AppRun switchboard.desktop switchboard.png .DirIcon usr/bin/switchboard usr/bin/switchboard-mcp; do
  [ -e "$root/$f" ] || fail "the AppImage lacks $f"
done
out="$("$root/AppRun" --version 2>&1)" || true
[ "$out" = "switchboard $version" ] || fail "the AppImage's AppRun --version printed: $out"
out="$(cd "$work" && APPIMAGE_EXTRACT_AND_RUN=1 "$abs_image" --version 2>&1)" || true
[ "$out" = "switchboard $version" ] || fail "the AppImage run with APPIMAGE_EXTRACT_AND_RUN=1 printed: $out"
has_line "$(cat "$root/switchboard.desktop")" "MimeType=application/x-mcpb;" "the AppImage's desktop entry"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"check","version":"1"}}}'
out="$(printf '%s\n' "$init" | timeout 20 "$root/usr/bin/switchboard-mcp" mcp-server calculator 2>/dev/null | head -1)" || true
grep -q '"serverInfo"' <<<"$out" || fail "the AppImage's built-in calculator did not answer initialize: $out"
# AppRun on a system without WebKitGTK (an ldd that finds no libwebkit2gtk): a clear message, exit 127
mkdir -p "$work/bin"
printf '#!/bin/sh\nprintf "\\tlibwebkit2gtk-4.1.so.0 => not found\\n\\tlibc.so.6 => /lib/libc.so.6\\n"\n' > "$work/bin/ldd"
chmod +x "$work/bin/ldd"
set +e
out="$(PATH="$work/bin:/usr/bin:/bin" "$root/AppRun" --version 2>&1)"; rc=$?
set -e
[ $rc = 127 ] && grep -q "libwebkit2gtk-4.1.so.0" <<<"$out" && grep -q "libwebkit2gtk-4.1-0" <<<"$out" || fail "AppRun without WebKitGTK: exit $rc, said: $out"

for p in "$deb" "$rpm" "$image"; do echo "packages: $(basename "$p") $(du -h "$p" | cut -f1)"; done
if [ $fails -gt 0 ]; then echo "packages: $fails check(s) failed" >&2; exit 1; fi
echo "packages: ok"
