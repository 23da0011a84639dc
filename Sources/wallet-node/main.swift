print("not yet")
