#!/bin/sh
# Adds Delegate Scope to the desktop's application menu for this user (Linux), pointing at this bundle.
# Run it from the unpacked bundle: ./install-desktop-entry.sh   (undo: ./install-desktop-entry.sh --remove)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
entry="$data/applications/delegate-scope.desktop"
icon="$data/icons/hicolor/256x256/apps/delegate-scope.png"
if [ "${1:-}" = "--remove" ]; then
    rm -f "$entry" "$icon"
    echo "removed $entry and $icon"
    exit 0
fi
mkdir -p "$(dirname "$entry")" "$(dirname "$icon")"
cp "$here/delegate-scope.png" "$icon"
sed "s|^Exec=delegate-scope|Exec=\"$here/delegate-scope\"|" "$here/delegate-scope.desktop" > "$entry"
command -v update-desktop-database >/dev/null && update-desktop-database "$data/applications" || true
echo "installed $entry (Exec: $here/delegate-scope) and $icon"
