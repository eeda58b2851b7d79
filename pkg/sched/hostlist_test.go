package sched

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "vm", want: []string{"vm"}},
		{in: "tux[0-2,12]", want: []string{"tux0", "tux1", "tux2", "tux12"}},
		{in: "n[009-011]", want: []string{"n009", "n010", "n011"}},
		{in: "a[01-03,07],b1", want: []string{"a01", "a02", "a03", "a07", "b1"}},
		{in: "node[1-2]-ib", want: []string{"node1-ib", "node2-ib"}},
		{in: "rack[1-2]-node[01-04]", want: []string{
			"rack1-node01", "rack1-node02", "rack1-node03", "rack1-node04",
			"rack2-node01", "rack2-node02", "rack2-node03", "rack2-node04"}},
		{in: "gpu[01-02],login1 x", want: []string{"gpu01", "gpu02", "login1", "x"}},
		{in: "", want: nil},
		{in: "n[3-1]", wantErr: "backwards"},
		{in: "n[1-", wantErr: "without ']'"},
		{in: "n]1", wantErr: "without '['"},
		{in: "][0]", wantErr: "without '['"},
		{in: "n[]", wantErr: "empty range"},
		{in: "n[a-b]", wantErr: "not a host number"},
		{in: "n[1-[2]]", wantErr: "nests"},
		{in: "n[0-99999999]", wantErr: "more than"},
	}
	for _, tc := range cases {
		got, err := ExpandHostlist(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ExpandHostlist(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	cases := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "4", want: []int{4}},
		{in: "2(x3),1", want: []int{2, 2, 2, 1}},
		{in: "72(x2),36", want: []int{72, 72, 36}},
		{in: "1,1", want: []int{1, 1}},
		{in: "", wantErr: true},
		{in: "2(x0)", wantErr: true},
		{in: "2(3)", wantErr: true},
		{in: "2(x3", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "a", wantErr: true},
		{in: "1(x99999999)", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ParseCounts(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseCounts(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"rack[1-2]-node[01-04]", "a[01-03,07],b1", "n[009-011]", "n[3-1]", "x,y z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(hosts) > maxHosts {
			t.Fatalf("%q gave %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[], ") {
				t.Fatalf("%q gave host %q", s, h)
			}
		}
	})
}

func FuzzCounts(f *testing.F) {
	for _, s := range []string{"2(x3),1", "72(x2),36", "4", "2(x0)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ParseCounts(s)
		if err != nil {
			return
		}
		if len(counts) == 0 || len(counts) > maxHosts {
			t.Fatalf("%q gave %d counts", s, len(counts))
		}
		for _, c := range counts {
			if c < 0 {
				t.Fatalf("%q gave negative count", s)
			}
		}
	})
}
