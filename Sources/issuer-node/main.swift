import TokenetNode

NodeMain.run(.issuer)
