#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}/docs"
cp guide.md /tmp/guide.md.orig.$$
sed -i -e 's/colour/color/g' -e 's/behaviour/behavior/g' -e 's/centre/center/g' guide.md faq.md
diff /tmp/guide.md.orig.$$ guide.md || true
rm -f /tmp/guide.md.orig.$$
