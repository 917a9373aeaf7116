package testdata

import "testing"

func TestNeedsThePlane(t *testing.T) {}
