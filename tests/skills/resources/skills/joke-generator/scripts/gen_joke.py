"""Prints a cat joke (the joke-generator skill's script)."""

print("Why did the cat sit on the computer? To keep an eye on the mouse.")
