package netns

import (
	"context"
	"fmt"
	"net/http"

	"rocetor/tor/lab"
)

// scrape reads and parses url's Prometheus text.
func scrape(ctx context.Context, client *http.Client, url string) (lab.Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return lab.ParseSample(resp.Body)
}
