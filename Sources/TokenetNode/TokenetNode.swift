// TokenetNode
