package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user the image runs as, with the uid and gid distroless images use, so
// securityContext.runAsUser: 65532 in the manifests names the same user on either image.
const (
	nonrootUID  = 65532
	nonrootHome = "/home/nonroot"
)

// baseFile is one entry of the base layer.
type baseFile struct {
	name string // path without the leading slash
	mode int64
	uid  int
	dir  bool
	data []byte
}

// baseFiles is the whole base filesystem: users and groups, the CA bundle, a home for the
// non-root user and a /tmp. There is no shell and no other executable.
func baseFiles() []baseFile {
	return []baseFile{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				fmt.Sprintf("nonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", nonrootUID, nonrootUID, nonrootHome))},
		{name: "etc/group", mode: 0o644, data: []byte(
			"root:x:0:\nnobody:x:65534:\n" + fmt.Sprintf("nonroot:x:%d:\n", nonrootUID))},
		// Go's resolver reads it to decide between /etc/hosts and DNS.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle()},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootUID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
}

// caBundle is Mozilla's root store, as embedded in golang.org/x/crypto/x509roots/fallback, in
// PEM. Roots that NSS trusts only for certificates issued before a date are left out: a PEM
// bundle cannot carry that constraint, and trusting them fully would widen it.
func caBundle() []byte {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return buf.Bytes()
}

// baseLayerTar returns the base filesystem as an uncompressed tar, every entry stamped with
// created.
func baseLayerTar(created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range baseFiles() {
		if err := writeEntry(tw, f, created); err != nil {
			return nil, fmt.Errorf("write base layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close base layer: %w", err)
	}
	return buf.Bytes(), nil
}

// binaryLayerTar returns a tar holding only /reloader, executable, owned by root (so the
// non-root user cannot replace it).
func binaryLayerTar(binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeEntry(tw, baseFile{name: "reloader", mode: 0o755, data: binary}, created); err != nil {
		return nil, fmt.Errorf("write binary layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close binary layer: %w", err)
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, f baseFile, created time.Time) error {
	hdr := &tar.Header{
		Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: created,
		Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX,
	}
	if f.dir {
		hdr.Typeflag, hdr.Size = tar.TypeDir, 0
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(f.data)
	return err
}
