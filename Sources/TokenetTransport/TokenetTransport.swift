// TokenetTransport
