package shipping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/text"
)

// maxQueryRange is Loki's default limits_config.max_query_length (721h): Loki refuses a
// query whose range vector spans more.
const maxQueryRange = 721 * time.Hour

// rangeMargin widens the counted range before the run's start: a record's timestamp is
// when the shipper read it, and a tag is unique to its run, so a wider range never
// counts another run's records.
const rangeMargin = 5 * time.Minute

// NewLokiClient returns a client of the destination's Loki holding the credentials that
// CredentialsEnv put in the environment, read with getenv.
func NewLokiClient(loki v1alpha1.LokiSpec, getenv func(string) string) *LokiClient {
	return &LokiClient{
		URL:         loki.URL,
		TenantID:    loki.TenantID,
		Username:    getenv(envLokiUsername),
		Password:    getenv(envLokiPassword),
		BearerToken: getenv(envLokiBearerToken),
	}
}

// LokiClient counts records through Loki's query API. The credentials live in memory
// only, read by the caller from the same Secret the sidecar gets; they are never logged
// or put in an error.
type LokiClient struct {
	// URL is the destination's loki.url.
	URL      string
	TenantID string
	// Username and Password authenticate with basic auth when Username is set.
	Username, Password string
	// BearerToken authenticates as Authorization: Bearer when set.
	BearerToken string
	HTTP        *http.Client
}

// CountQuery is the LogQL query counting the records holding tag among the streams of
// selector over the range that ends at the query's time.
func CountQuery(selector, tag string, window time.Duration) string {
	seconds := int64(math.Ceil(window.Seconds()))
	return fmt.Sprintf("sum(count_over_time(%s |= %s [%ds]))", selector, strconv.Quote(tag), seconds)
}

// CountRecords counts the records holding tag that Loki holds for selector, from since
// to at, with an instant query at at: an instant query evaluates the range vector once,
// where query_range would evaluate it at every step.
func (c *LokiClient) CountRecords(ctx context.Context, selector, tag string, since, at time.Time) (int64, error) {
	window := at.Sub(since) + rangeMargin
	if window > maxQueryRange {
		return 0, fmt.Errorf("the run spans %s, more than Loki's default max_query_length of %s", window, maxQueryRange)
	}
	query := url.Values{
		"query": {CountQuery(selector, tag, window)},
		"time":  {strconv.FormatInt(at.UnixNano(), 10)},
	}
	body, err := c.get(ctx, "/loki/api/v1/query?"+query.Encode())
	if err != nil {
		return 0, err
	}
	return parseCountResponse(body)
}

// Metrics reads Loki's own /metrics page: the records Loki refused from the client's
// tenant so far, by reason, and when Loki started. The counters cover every client of
// the tenant, so they explain a run's drops rather than count them. A Loki behind a
// gateway or a path prefix often does not serve /metrics at the push URL: the error then
// says so.
func (c *LokiClient) Metrics(ctx context.Context) (LokiMetrics, error) {
	body, err := c.get(ctx, "/metrics")
	if err != nil {
		return LokiMetrics{}, err
	}
	tenant := c.TenantID
	if tenant == "" {
		// Loki's tenant when it runs without authentication (auth_enabled: false).
		tenant = "fake"
	}
	return ParseLokiMetrics(bytes.NewReader(body), tenant)
}

// requestTimeout bounds a request to Loki or to a shipper's metrics: one that never
// answers (a dropped connection) must not hold a drain past its deadline for long.
const requestTimeout = 20 * time.Second

// get sends an authenticated GET for path under the client's URL and returns the body of
// a 200 answer.
func (c *LokiClient) get(ctx context.Context, path string) ([]byte, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.URL, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	if c.TenantID != "" {
		request.Header.Set("X-Scope-OrgID", c.TenantID)
	}
	switch {
	case c.Username != "":
		request.SetBasicAuth(c.Username, c.Password)
	case c.BearerToken != "":
		request.Header.Set("Authorization", "Bearer "+c.BearerToken)
	}
	return fetch(c.HTTP, request, "loki")
}

// fetch sends the request, within requestTimeout, and returns the body of a 200 answer;
// what names the server in errors. A server that cannot be reached, times out, or
// answers that it cannot serve now (5xx, 429) is unavailable (bench.UnavailableError): it
// may answer later. Of another answer the error keeps the status line alone: the body is
// the server's text, which the status must not carry (the URL names any server).
//
// Redirects are not followed: the request carries the tenant and the credentials, and a
// redirect would send them, or at least the query, to whatever host the answer names.
func fetch(httpClient *http.Client, request *http.Request, what string) ([]byte, error) {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	noRedirects := *httpClient
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	httpClient = &noRedirects
	ctx, cancel := context.WithTimeout(request.Context(), requestTimeout)
	defer cancel()
	request = request.WithContext(ctx)
	response, err := httpClient.Do(request)
	if err != nil {
		// The URL holds the whole query: the cause says enough.
		if urlErr := (*url.Error)(nil); errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		err = fmt.Errorf("querying %s: %w", what, err)
		if errors.Is(request.Context().Err(), context.Canceled) {
			return nil, err
		}
		return nil, &bench.UnavailableError{Err: err}
	}
	defer response.Body.Close()
	// Answers to the queries sent here are small; a bigger one is not the answer.
	body, err := io.ReadAll(io.LimitReader(response.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", what, err)
	}
	if response.StatusCode != http.StatusOK {
		err := fmt.Errorf("%s answered %s", what, text.Truncate(response.Status, 64))
		if response.StatusCode >= http.StatusMultipleChoices && response.StatusCode < http.StatusBadRequest {
			// Where it points is the server's text too: the error does not repeat it.
			err = fmt.Errorf("%w, a redirect, which logbench does not follow: use the URL it points to", err)
		}
		if response.StatusCode >= http.StatusInternalServerError || response.StatusCode == http.StatusTooManyRequests {
			return nil, &bench.UnavailableError{Err: err}
		}
		return nil, err
	}
	return body, nil
}

// maxAnswer bounds what is read of an answer of Loki or of a shipper: a /metrics page of
// a busy Loki is a few hundred kilobytes.
const maxAnswer = 8 << 20

// parseCountResponse reads the answer to CountQuery: a vector of at most one sample (no
// sample when nothing matched) whose value is a whole number of records.
func parseCountResponse(body []byte) (int64, error) {
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value []json.RawMessage `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return 0, fmt.Errorf("loki's answer is not a query result: %w", err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" {
		return 0, fmt.Errorf(
			"loki's answer has status %q and result type %q, want success and vector",
			answer.Status,
			answer.Data.ResultType,
		)
	}
	var total int64
	for _, sample := range answer.Data.Result {
		var value string
		if len(sample.Value) != 2 || json.Unmarshal(sample.Value[1], &value) != nil {
			return 0, fmt.Errorf("loki's sample %s is not [time, \"value\"]", sample.Value)
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || n < 0 || n > maxCount || n != math.Trunc(n) {
			return 0, fmt.Errorf("loki counted %q records, which is not a count", value)
		}
		total += int64(n)
	}
	return total, nil
}

// RunCounter counts one run's records in Loki; it is a bench.Destination.
type RunCounter struct {
	Client   *LokiClient
	Selector string
	Tag      string
	// Started is when the run began.
	Started time.Time
	Clock   bench.Clock
}

// Delivered counts the run's records Loki holds now.
func (r RunCounter) Delivered(ctx context.Context) (int64, error) {
	return r.Client.CountRecords(ctx, r.Selector, r.Tag, r.Started, r.Clock.Now())
}

// IdentityCount is what a read of a run's stored lines found: how many lines, holding
// how many distinct records.
type IdentityCount struct {
	Lines, Distinct int64
}

// MaxIdentityLines bounds the lines ReadIdentities reads: each distinct identity is held
// in memory, and each page is a request to Loki.
const MaxIdentityLines = 500_000

// identityPage is how many entries one query_range answer holds: Loki's default
// max_entries_limit_per_query is 5,000, and a page must fit maxAnswer with long records.
const identityPage = 1000

// ReadIdentities reads the lines holding tag among the streams of selector, from since
// to at, oldest first, and counts the distinct record identities parse finds in them. A
// line parse cannot read is an error: no identity is guessed. Pages follow each other by
// timestamp; the next starts at the last one's latest timestamp, and skips the entries
// of that timestamp the last page held. More than maxLines lines is an error.
func (c *LokiClient) ReadIdentities(ctx context.Context, selector, tag string, since, at time.Time,
	parse IdentityParser, maxLines int64,
) (IdentityCount, error) {
	start := since.Add(-rangeMargin)
	if at.Sub(start) > maxQueryRange {
		return IdentityCount{}, fmt.Errorf("the run spans %s, more than Loki's default max_query_length of %s",
			at.Sub(start), maxQueryRange)
	}
	distinct := map[RecordIdentity]struct{}{}
	var lines int64
	// atStart are the entries of the page's start timestamp the previous page held.
	atStart := map[storedEntry]int{}
	for {
		query := url.Values{
			"query":     {fmt.Sprintf("%s |= %s", selector, strconv.Quote(tag))},
			"start":     {strconv.FormatInt(start.UnixNano(), 10)},
			"end":       {strconv.FormatInt(at.UnixNano(), 10)},
			"direction": {"forward"},
			"limit":     {strconv.Itoa(identityPage)},
		}
		body, err := c.get(ctx, "/loki/api/v1/query_range?"+query.Encode())
		if err != nil {
			return IdentityCount{}, err
		}
		entries, err := parseStreamsResponse(body)
		if err != nil {
			return IdentityCount{}, err
		}
		latest := start.UnixNano()
		next := map[storedEntry]int{}
		for _, e := range entries {
			if e.nanos > latest {
				latest, next = e.nanos, map[storedEntry]int{}
			}
			if e.nanos == latest {
				next[e.storedEntry]++
			}
			if e.nanos == start.UnixNano() && atStart[e.storedEntry] > 0 {
				atStart[e.storedEntry]--
				continue
			}
			if lines++; lines > maxLines {
				return IdentityCount{}, fmt.Errorf("loki holds more than %d lines of the run", maxLines)
			}
			id, err := parse(e.line)
			if err != nil {
				return IdentityCount{}, fmt.Errorf("a line loki holds at %d: %w", e.nanos, err)
			}
			distinct[id] = struct{}{}
		}
		if len(entries) < identityPage {
			return IdentityCount{Lines: lines, Distinct: int64(len(distinct))}, nil
		}
		if latest == start.UnixNano() {
			return IdentityCount{}, fmt.Errorf("loki holds at least %d lines at %d: they cannot be paged by timestamp",
				identityPage, latest)
		}
		start, atStart = time.Unix(0, latest), next
	}
}

// storedEntry is a line of a stream; Loki keeps one of identical entries of a stream at
// one timestamp.
type storedEntry struct {
	stream, line string
}

type timedEntry struct {
	storedEntry
	nanos int64
}

// parseStreamsResponse reads the answer of a log query: streams of [time, line] values.
func parseStreamsResponse(body []byte) ([]timedEntry, error) {
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("loki's answer is not a query result: %w", err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "streams" {
		return nil, fmt.Errorf("loki's answer has status %q and result type %q, want success and streams",
			answer.Status, answer.Data.ResultType)
	}
	var entries []timedEntry
	for _, stream := range answer.Data.Result {
		labels, err := json.Marshal(stream.Stream)
		if err != nil {
			return nil, err
		}
		for _, value := range stream.Values {
			nanos, err := strconv.ParseInt(value[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("loki's entry time %.40q is not nanoseconds", value[0])
			}
			entries = append(entries, timedEntry{storedEntry{string(labels), value[1]}, nanos})
		}
	}
	return entries, nil
}
