//go:build !linux

package pageout

import "errors"

func pageOut(span) error { return errors.New("not supported on this system") }

func adviseRandom(span) error { return errors.New("not supported on this system") }
