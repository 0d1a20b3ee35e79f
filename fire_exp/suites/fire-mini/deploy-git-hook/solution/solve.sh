#!/bin/bash
set -euo pipefail
cd "${FIRE_WORKDIR:-/app}"
git clone -q git/site.git /tmp/site-clone.$$
cp incoming/about.html /tmp/site-clone.$$/
cd /tmp/site-clone.$$
git add about.html
git -c user.name=oracle -c user.email=oracle@example.com commit -q -m "Add the about page"
git push -q origin main
cd - > /dev/null
curl -s "file://$PWD/www/about.html" | head -3
rm -rf /tmp/site-clone.$$
