// Package docker is the folder that runs a whole cluster with docker
// compose (SeaweedFS, two gateways, Prometheus and Grafana) from the image
// its Dockerfile builds. It has no Go code of its own: its tests check that
// the compose file runs weed commands with flags they have and wires its
// services together, that Prometheus scrapes where compose serves metrics,
// and that every metric the Grafana dashboard queries is one the gateway
// exports.
package docker
