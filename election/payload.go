package election

// PayloadTransport is an optional capability of a Transport that carries a
// small opaque payload for each member, such as the address of its service
// API (membership.Node does: membership.Config.Payload).
//
// Payload may be called from any goroutine; it must not block.
type PayloadTransport interface {
	Transport
	// Payload returns what member id publishes; ok is false when the
	// member is unknown or gone.
	Payload(id string) (payload string, ok bool)
}

// Payload returns what member id publishes through the Transport (see
// PayloadTransport); ok is false when the Transport carries no payloads or
// does not know id.
func (e *Elector) Payload(id string) (payload string, ok bool) {
	pt, has := e.tr.(PayloadTransport)
	if !has || id == "" {
		return "", false
	}
	return pt.Payload(id)
}

// LeaderPayload returns the coordinator this node reports (as Observe
// does) and the payload it publishes, for example the service address to
// send a client to. payload is "" when no coordinator is known, or when
// the Transport has no payload for it.
func (e *Elector) LeaderPayload() (l Leadership, payload string) {
	return e.def.LeaderPayload()
}
