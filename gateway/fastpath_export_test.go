package gateway

// FastAnswers is the number of requests answered on the read loop so far.
func FastAnswers() int64 { return fastAnswers.Load() }
