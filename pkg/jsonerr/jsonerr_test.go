package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

type mig struct {
	UUID string `json:"uuid"`
}

type gpuDesc struct {
	NUMA   *int   `json:"numa"`
	Memory uint64 `json:"memory_mib"`
	MIG    []mig  `json:"mig"`
}

type doc struct {
	Name string    `json:"name"`
	GPUs []gpuDesc `json:"gpus"`
}

func decode(data string) error {
	var d doc
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	return Explain("node.json", []byte(data), dec.Decode(&d))
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		rule, data, want string
	}{
		{"a syntax error is placed at the byte found wrong", "{\n  \"gpus\": [\n    {\"numa\": 1,}\n  ]\n}",
			"node.json:3:16: invalid character '}' looking for beginning of object key string"},
		{"a value of the wrong kind names the field path and the JSON type it takes", "{\"gpus\": [\n  {\"numa\": \"zero\"}]}",
			"node.json:2:12: gpus.numa: a string where a whole number belongs"},
		{"a nested field's path is whole", "{\"gpus\": [{\"mig\": [{\"uuid\": 5}]}]}",
			"node.json:1:29: gpus.mig.uuid: a number where a string belongs"},
		{"a list where an object is", `{"gpus": 3}`, "node.json:1:10: gpus: a number where a list […] belongs"},
		{"a negative size", `{"gpus": [{"memory_mib": -1}]}`, "node.json:1:26: gpus.memory_mib: the number -1 where a whole number, 0 or more belongs"},
		{"the top level of the wrong kind", `[1, 2]`, "node.json:1:1: the document: a list where an object {…} belongs"},
		{"an unknown field is found in the file", "{\n  \"name\": \"n\",\n  \"gpu\": []\n}", `node.json:3:3: unknown field "gpu"`},
		{"a file cut short", "{\"gpus\": [\n  {\"numa\": 0}", "node.json:2:14: the JSON ends early"},
		{"an empty file", "  \n", "node.json: the file is empty"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			err := decode(tc.data)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q…", err, tc.want)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "main.") || strings.Contains(err.Error(), "jsonerr.") {
				t.Errorf("a Go name leaks: %v", err)
			}
		})
	}
}

func TestExplainUnmarshal(t *testing.T) {
	// json.Unmarshal reports a cut file as a syntax error of its own words
	var d doc
	data := []byte(`{"name": "x", "gpus": [`)
	err := Explain("r.json", data, json.Unmarshal(data, &d))
	if err == nil || !strings.HasPrefix(err.Error(), "r.json:1:24: the JSON ends early") {
		t.Fatalf("got %v", err)
	}
}
