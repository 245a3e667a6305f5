package exporter_test

import (
	"log"
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cputime/cputime/exporter"
)

// Export the processes named postgres, with their threads, beside a
// program's own metrics.
func Example() {
	c, err := exporter.New(exporter.Options{
		Name:    regexp.MustCompile(`^postgres`),
		Threads: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	prometheus.MustRegister(c)
	http.Handle("/metrics", promhttp.HandlerFor(prometheus.DefaultGatherer,
		promhttp.HandlerOpts{EnableOpenMetrics: true}))
	// http.ListenAndServe(":10641", nil)
}
