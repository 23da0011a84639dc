import TokenetNode

NodeMain.run(.wallet)
