package mcpface

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// peekBody reads r's body, at most maxTaskBody bytes, and puts it back for
// the handlers behind. A larger one is answered 413 (tooLarge); the
// layer's front (layer.MaxBody) refuses one before it gets here.
func peekBody(w http.ResponseWriter, r *http.Request) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil && len(body) > maxTaskBody {
		http.Error(w, fmt.Sprintf("request body over %d bytes", maxTaskBody), http.StatusRequestEntityTooLarge)
		return nil, true, nil
	}
	return body, false, err
}
