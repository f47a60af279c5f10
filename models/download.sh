#!/bin/sh
# Puts a Whisper model in whisper.cpp's ggml format at models/ggml-NAME.bin.
#
#   models/download.sh [NAME]      NAME: tiny.en, tiny, base.en, base (default), small.en,
#                                  small, medium.en, medium, large-v1, large-v2, large-v3,
#                                  large-v3-turbo
#
# Uses the copy in $WHISPERC_SHARED/models or ../shared/models when there is one (a link, no
# download); otherwise downloads whisper.cpp's file from Hugging Face and checks its SHA-1
# against models/README.md.
set -eu
name="${1:-base}"
here="$(cd "$(dirname "$0")" && pwd)"
file="ggml-$name.bin"
dest="$here/$file"
if [ -e "$dest" ]; then
    echo "$dest already exists"
    exit 0
fi
for dir in "${WHISPERC_SHARED:-}" "$here/../../shared"; do
    if [ -n "$dir" ] && [ -f "$dir/models/$file" ]; then
        ln -s "$(cd "$dir/models" && pwd)/$file" "$dest"
        echo "linked $dest -> $dir/models/$file"
        exit 0
    fi
done
sha1=$(awk -F'|' -v f="$file" '{ gsub(/[ `]/, "", $3); gsub(/[ `]/, "", $4) } $3 == f { print $4 }' "$here/README.md")
if [ -z "$sha1" ]; then
    echo "unknown model '$name' (see models/README.md)" >&2
    exit 2
fi
url="https://huggingface.co/ggerganov/whisper.cpp/resolve/main/$file"
echo "downloading $url"
tmp="$dest.part"
if command -v curl >/dev/null 2>&1; then
    curl -fL --retry 3 -o "$tmp" "$url"
else
    wget -O "$tmp" "$url"
fi
got=$(sha1sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$sha1" ]; then
    rm -f "$tmp"
    echo "$file: SHA-1 $got does not match the expected $sha1" >&2
    exit 1
fi
mv "$tmp" "$dest"
echo "saved $dest"
