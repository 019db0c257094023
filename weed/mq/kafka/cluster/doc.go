// Package cluster is what makes one gateway part of a cluster of them: the
// leadership checks around the Backend (Owned: a partition is written and
// read only by the gateway that serves it), every request to the other
// gateways (Peers, and Forwarder: markers, offsets and transaction checks
// sent to the gateway that owns them), the gateways' own login to one
// another (Identity), and the call metrics of the Backend and the filer.
package cluster
