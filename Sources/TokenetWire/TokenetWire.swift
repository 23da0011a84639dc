// TokenetWire
