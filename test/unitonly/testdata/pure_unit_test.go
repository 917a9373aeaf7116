package testdata

import "testing"

func TestPure(t *testing.T) {}

func FuzzPure(f *testing.F) {}

func helper(t *testing.T) {}

type s struct{}

func (s) TestMethod(t *testing.T) {}
