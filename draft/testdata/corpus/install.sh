#!/usr/bin/env bash
# Installs the public API descriptions airlock init is tested on (see
# SOURCES): the npm packages pinned in package-lock.json, and the Docker
# Engine API's Swagger 2.0 document from Debian's package. Nothing they
# bring is committed. Run from anywhere: bash draft/testdata/corpus/install.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
npm ci --ignore-scripts --no-audit --no-fund
if [[ ! -f debian/docker-engine-api.swagger.yaml ]]; then
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download golang-github-docker-docker-dev)
	dpkg-deb -x "$tmp"/golang-github-docker-docker-dev_*.deb "$tmp/x"
	mkdir -p debian
	cp "$tmp/x/usr/share/gocode/src/github.com/docker/docker/api/swagger.yaml" debian/docker-engine-api.swagger.yaml
	cp "$tmp/x/usr/share/doc/golang-github-docker-docker-dev/copyright" debian/docker-copyright
fi
