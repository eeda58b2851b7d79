package gpu

// ShortUUID is a GPU's UUID as a table or a line shows it: its first 12
// characters and "…" ("GPU-1a2b3c4d…"), enough to tell a node's GPUs
// apart; a shorter one whole.
func ShortUUID(u string) string {
	if len(u) > 12 {
		return u[:12] + "…"
	}
	return u
}
