package main

import (
	"net/http"
	"strconv"
	"time"
)

// maxScrapeWait bounds how long a scrape waits for its metrics when the
// scraper does not say its own timeout.
const maxScrapeWait = 30 * time.Second

// scrapeTimeout answers 503 when the metrics are not ready within the
// scrape's own timeout (Prometheus sends it in
// X-Prometheus-Scrape-Timeout-Seconds), at most maxScrapeWait: the
// scraper has given up by then. The collection a scrape joined goes on
// for the others.
func scrapeTimeout(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := maxScrapeWait
		if v, err := strconv.ParseFloat(r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64); err == nil && v > 0 && v < d.Seconds() {
			d = time.Duration(v * float64(time.Second))
		}
		http.TimeoutHandler(h, d, "cputime: the metrics took longer than the scrape's timeout\n").ServeHTTP(w, r)
	})
}
