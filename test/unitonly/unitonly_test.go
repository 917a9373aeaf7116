package unitonly

import (
	"flag"
	"testing"

	"github.com/onsi/gomega"
)

func TestTests_ListsOnlyTheTestsOfUnitFiles(t *testing.T) {
	g := gomega.NewWithT(t)
	// testdata holds pure_unit_test.go (TestPure, FuzzPure, a helper and a
	// method) and plane_test.go (TestNeedsThePlane).
	names, err := Tests("testdata")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(names).To(gomega.Equal([]string{"FuzzPure", "TestPure"}))
}

func TestSelect_SetsTheRunPattern(t *testing.T) {
	g := gomega.NewWithT(t)
	run := flag.Lookup("test.run")
	old := run.Value.String()
	t.Cleanup(func() { _ = flag.Set("test.run", old) })

	_, err := Select("testdata")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(run.Value.String()).To(gomega.Equal("^(FuzzPure|TestPure)$"))

	_, err = Select(t.TempDir())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(run.Value.String()).To(gomega.Equal("^$"), "a package without unit files selects nothing")
}
