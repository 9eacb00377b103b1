"""Rebuild the generated catalog CSVs from saved copies of the public pages they come from.

``pages/*.txt`` hold the tables read from each page (its address, the date it was read, whether
its figures are verified, and how it was read, in ``#`` header lines). To refresh the data, save new
copies of the tables there and run ``python3 -m trainpool.catalog.refresh``; ``--check`` fails
when the CSVs differ from what the pages give (the tests run it).
"""
