#!/bin/bash
# Prepares the agent's working folder, in a container (/app) and locally ($FIRE_WORKDIR):
# a bare repository whose post-receive hook deploys branch main into www/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${FIRE_WORKDIR:-/app}"
mkdir -p "$work"
cp -a "$here/files/." "$work/"
git() { command git -c user.name=setup -c user.email=setup@example.com \
  -c init.defaultBranch=main "$@"; }
git init -q --bare "$work/git/site.git"
cat > "$work/git/site.git/hooks/post-receive" <<HOOK
#!/bin/bash
# Deploys branch main into the web server's document root.
while read -r old new ref; do
  if [ "\$ref" = refs/heads/main ]; then
    mkdir -p "$work/www"
    git --git-dir="$work/git/site.git" --work-tree="$work/www" checkout -f -q main
    echo "deployed \$new to $work/www"
  fi
done
HOOK
chmod +x "$work/git/site.git/hooks/post-receive"
seed="$(mktemp -d)"
git init -q "$seed"
cp "$work/site/index.html" "$seed/"
git -C "$seed" add index.html
git -C "$seed" commit -q -m "Front page"
git -C "$seed" push -q "$work/git/site.git" main
rm -rf "$seed" "$work/site"
