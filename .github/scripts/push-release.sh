#!/usr/bin/env bash
# Pushes a release built by `make release` (release.yml; RELEASING.md): the image index from
# dist/oci to $IMAGE:$VERSION, checked to have the digest the rendered manifests pin, then the
# packaged chart to $CHARTS. Prints DIGEST=<image index digest> and CHART_DIGEST=<chart digest>.
# CRANE and HELM are the pinned tools; HELM_FLAGS adds flags to helm push (the release test
# passes --plain-http for its loopback registry). internal/dev/release's test runs this script.
set -euo pipefail
: "${CRANE:?} ${HELM:?} ${IMAGE:?} ${CHARTS:?} ${VERSION:?}"
dist=${DIST:-dist}

"$CRANE" push "$dist/oci" "$IMAGE:$VERSION" >&2
want=$(grep -o 'sha256:[0-9a-f]\{64\}' "$dist/oci/index.json") # its one entry: the image index
got=$("$CRANE" digest "$IMAGE:$VERSION")
if [ "$want" != "$got" ]; then
	echo "pushed $got, the manifests pin $want" >&2
	exit 1
fi
echo "DIGEST=$got"

# shellcheck disable=SC2086 # HELM_FLAGS is a list of flags
pushed=$("$HELM" push "$dist/reloader-${VERSION#v}.tgz" "$CHARTS" ${HELM_FLAGS:-} 2>&1) || {
	echo "$pushed" >&2
	exit 1
}
echo "$pushed" >&2
chart=$(sed -n 's/^Digest: //p' <<<"$pushed")
if [ -z "$chart" ]; then
	echo "helm push printed no digest" >&2
	exit 1
fi
echo "CHART_DIGEST=$chart"
