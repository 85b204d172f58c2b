package gateway

// FastAnswers is the number of requests answered on the read loop so far.
func FastAnswers() int64 { return fastAnswers.Load() }

// MemoAnswers is the number of requests answered from the memo so far.
func MemoAnswers() int64 { return memoAnswers.Load() }
