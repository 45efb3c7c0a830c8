#!/usr/bin/env bash
# Everything the test suite needs on a fresh Debian machine, then the tests.
#   Debian: chromium (browser tests, static figure export), fonts-noto-cjk (Chinese glyphs),
#           fonts-noto-color-emoji (emoji in pages and exported figures), and the TrueType fonts PDF
#           exports are set in (no Type 3 fonts: viz.theme.PDF_FONTS): fonts-liberation,
#           fonts-arphic-uming, fonts-wqy-zenhei, fonts-dejavu-core
#   PyPI:   requirements.txt (torch==2.13.0 CPU wheel among them)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || need_apt+=(fonts-noto-cjk)
fc-list 2>/dev/null | grep -qi "Noto Color Emoji" || need_apt+=(fonts-noto-color-emoji)
fc-list 2>/dev/null | grep -qi "Liberation Serif" || need_apt+=(fonts-liberation)
fc-list 2>/dev/null | grep -qi "AR PL UMing" || need_apt+=(fonts-arphic-uming)
fc-list 2>/dev/null | grep -qi "WenQuanYi Zen Hei" || need_apt+=(fonts-wqy-zenhei)
fc-list 2>/dev/null | grep -qi "DejaVu Sans" || need_apt+=(fonts-dejavu-core)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

python3 -m pip install -q --disable-pip-version-check -r requirements.txt

python3 -m ruff check .
python3 -m pytest "$@"
