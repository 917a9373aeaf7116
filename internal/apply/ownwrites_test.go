package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestOwnWrites_SeesOnlyTheUpdateOfASettledWrite records writes of
// Deployments and asks about the update events a watch would deliver,
// before and after each write's answer.
func TestOwnWrites_SeesOnlyTheUpdateOfASettledWrite(t *testing.T) {
	at := func(uid, rv string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	o := NewOwnWrites()

	// Positive first: the update from 10 to 11 of a, after the write's
	// answer, once.
	o.Expect(at("a", "10"))
	o.Written(at("a", "10"), at("a", "11"))
	if !o.Seen(at("a", "10"), at("a", "11")) {
		t.Fatal("the write is not seen")
	}
	if o.Seen(at("a", "10"), at("a", "11")) {
		t.Error("a write is seen twice")
	}

	// The event before the answer: taken while the write is in flight.
	o.Expect(at("a", "20"))
	if !o.Seen(at("a", "20"), at("a", "21")) {
		t.Error("the write in flight is not seen")
	}
	o.Written(at("a", "20"), at("a", "21"))
	if o.Seen(at("a", "20"), at("a", "21")) {
		t.Error("the write is seen again after its answer")
	}

	// Other updates are not.
	o.Expect(at("a", "30"))
	o.Written(at("a", "30"), at("a", "31"))
	for name, e := range map[string][2]*appsv1.Deployment{
		"someone else's write after Reroll's": {at("a", "31"), at("a", "32")},
		"a write over another version":        {at("a", "29"), at("a", "31")},
		"another version from the same one":   {at("a", "30"), at("a", "33")},
		"another workload's update":           {at("b", "30"), at("b", "31")},
		"a resync":                            {at("a", "31"), at("a", "31")},
	} {
		if o.Seen(e[0], e[1]) {
			t.Errorf("%s is seen as Reroll's own write", name)
		}
	}
	if !o.Seen(at("a", "30"), at("a", "31")) {
		t.Error("the write is not seen after the others")
	}

	// A failed write, and a write that changed nothing, are forgotten.
	o.Expect(at("a", "40"))
	o.Failed(at("a", "40"))
	if o.Seen(at("a", "40"), at("a", "41")) {
		t.Error("an update after a failed write is seen")
	}
	o.Expect(at("a", "50"))
	o.Written(at("a", "50"), at("a", "50"))
	if o.Seen(at("a", "50"), at("a", "51")) {
		t.Error("an update after a write that changed nothing is seen")
	}

	var none *OwnWrites
	none.Expect(at("a", "1"))
	none.Written(at("a", "1"), at("a", "2"))
	none.Failed(at("a", "1"))
	if none.Seen(at("a", "1"), at("a", "2")) {
		t.Error("a nil OwnWrites sees a write")
	}
}
